import SatchelBytes

/// One tag-length-length-value block (guide Table 2-2).
///
/// The block keeps its padding so that a KSM can return it verbatim, as a tag
/// return request demands.
public struct TLLV: Sendable, Equatable {
    /// The block's tag.
    public let tag: TLLVTag
    /// The value field.
    public let value: [UInt8]
    /// The padding that follows the value; with it the block is a multiple of 16 bytes.
    public let padding: [UInt8]

    /// The size of the tag, block length and value length fields.
    public static let headerSize = 16

    /// A block with explicit padding. `value.count + padding.count` should be a multiple of 16;
    /// ``TLLVCodec/encode(_:)`` writes exactly what it is given.
    public init(tag: TLLVTag, value: [UInt8], padding: [UInt8]) {
        self.tag = tag
        self.value = value
        self.padding = padding
    }

    /// A block whose padding is random (never all 0x00 or 0xFF), filling the value out
    /// to a multiple of 16 bytes and then by `extraBlocks` more 16-byte blocks.
    public init(tag: TLLVTag, value: [UInt8], extraBlocks: Int = 0) {
        let fill = (16 - value.count % 16) % 16 + 16 * max(extraBlocks, 0)
        self.init(tag: tag, value: value, padding: SecureRandom.padding(fill))
    }

    /// The block length field: value plus padding.
    public var blockLength: Int { value.count + padding.count }

    /// The whole block as it appears in a payload.
    public var encoded: [UInt8] {
        var writer = ByteWriter(capacity: Self.headerSize + blockLength)
        write(to: &writer)
        return writer.bytes
    }

    /// Appends the whole block to `writer`.
    public func write(to writer: inout ByteWriter) {
        writer.writeUInt64(tag.rawValue)
        writer.writeUInt32(UInt32(truncatingIfNeeded: blockLength))
        writer.writeUInt32(UInt32(truncatingIfNeeded: value.count))
        writer.writeBytes(value)
        writer.writeBytes(padding)
    }
}
