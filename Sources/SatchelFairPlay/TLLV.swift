import SatchelBytes

/// One tag-length-length-value block (guide Table 2-2).
///
/// The block keeps its padding so that a KSM can return it verbatim, as a tag
/// return request demands.
public struct TLLV: Sendable, Equatable {
    /// The block's tag.
    public let tag: TLLVTag
    /// Value and padding together, a slice of the bytes the block was parsed from (no copy, one reference).
    private let storage: ArraySlice<UInt8>
    /// The value length field.
    public let valueLength: Int

    /// The value field.
    public var valueBytes: ArraySlice<UInt8> { storage.prefix(valueLength) }

    /// The value field as an array (a copy; prefer ``valueBytes`` or ``valueLength`` in hot paths).
    public var value: [UInt8] { Array(valueBytes) }

    /// The padding that follows the value; with it the block is a multiple of 16 bytes.
    public var paddingBytes: ArraySlice<UInt8> { storage.dropFirst(valueLength) }

    /// The padding as an array.
    public var padding: [UInt8] { Array(paddingBytes) }

    /// The size of the tag, block length and value length fields.
    public static let headerSize = 16

    /// A block with explicit padding. `value.count + padding.count` should be a multiple of 16;
    /// `TLLVCodec/encode(_:)` writes exactly what it is given.
    public init(tag: TLLVTag, value: [UInt8], padding: [UInt8]) {
        self.init(tag: tag, block: ArraySlice(value + padding), valueLength: value.count)
    }

    /// A block from separate value and padding bytes.
    public init(tag: TLLVTag, valueBytes: ArraySlice<UInt8>, paddingBytes: ArraySlice<UInt8>) {
        self.init(tag: tag, block: ArraySlice(Array(valueBytes) + Array(paddingBytes)), valueLength: valueBytes.count)
    }

    /// A block whose value and padding are the slice `block`, the value being its first `valueLength` bytes.
    init(tag: TLLVTag, block: ArraySlice<UInt8>, valueLength: Int) {
        self.tag = tag
        self.storage = block
        self.valueLength = valueLength
    }

    /// A block whose padding is random (never all 0x00 or 0xFF), filling the value out
    /// to a multiple of 16 bytes and then by `extraBlocks` more 16-byte blocks.
    public init(tag: TLLVTag, value: [UInt8], extraBlocks: Int = 0) {
        var pool = SecureRandom.Pool(capacity: 64)
        self.init(tag: tag, value: value, extraBlocks: extraBlocks, random: &pool)
    }

    /// The same, drawing the padding from `random` (one pool can serve a whole message).
    public init(tag: TLLVTag, value: [UInt8], extraBlocks: Int, random: inout SecureRandom.Pool) {
        let fill = (16 - value.count % 16) % 16 + 16 * max(extraBlocks, 0)
        self.init(tag: tag, block: ArraySlice(value + random.padding(fill)), valueLength: value.count)
    }

    /// The block length field: value plus padding.
    public var blockLength: Int { storage.count }

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
        writer.writeUInt32(UInt32(truncatingIfNeeded: valueLength))
        writer.writeBytes(storage)
    }

    public static func == (lhs: TLLV, rhs: TLLV) -> Bool {
        lhs.tag == rhs.tag && lhs.valueLength == rhs.valueLength && lhs.storage.elementsEqual(rhs.storage)
    }
}

extension TLLV {
    /// Decodes a fixed-layout value with `body`; a value shorter than `length` bytes becomes a
    /// typed error naming the tag.
    func decodeValue<T>(needs length: Int, _ body: (inout ByteReader) throws(ByteReaderError) -> T) throws(FairPlayError) -> T {
        var reader = ByteReader(value)
        do {
            return try body(&reader)
        } catch {
            throw .invalidTLLVValue(tag, reason: "value is \(valueLength) bytes, needs \(length)")
        }
    }
}
