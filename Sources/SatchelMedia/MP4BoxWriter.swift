import SatchelBytes

/// Writes ISO BMFF boxes, filling in sizes when a box is closed.
public struct MP4BoxWriter: Sendable {
    /// The bytes written so far.
    public private(set) var writer = ByteWriter()
    private var open: [Int] = []

    /// An empty writer, optionally reserving capacity.
    public init(capacity: Int = 0) { writer = ByteWriter(capacity: capacity) }

    /// An empty writer that takes over `buffer`'s storage (cleared, capacity kept); give it back with ``finish(into:)``.
    public init(reusing buffer: inout [UInt8]) { writer = ByteWriter(reusing: &buffer) }

    /// Moves the written bytes into `buffer` without copying.
    public mutating func finish(into buffer: inout [UInt8]) { writer.finish(into: &buffer) }

    /// The bytes written so far.
    public var bytes: [UInt8] { writer.bytes }

    /// The number of bytes written so far.
    public var count: Int { writer.count }

    /// Writes the box built by `body`.
    public mutating func box(_ type: FourCC, _ body: (inout MP4BoxWriter) -> Void) {
        begin(type)
        body(&self)
        end()
    }

    /// Writes a full box (version and flags) built by `body`.
    public mutating func fullBox(_ type: FourCC, version: UInt8 = 0, flags: UInt32 = 0, _ body: (inout MP4BoxWriter) -> Void) {
        begin(type)
        writer.writeUInt32(UInt32(version) << 24 | (flags & 0x00ff_ffff))
        body(&self)
        end()
    }

    /// Starts a box whose size is filled in by ``end()``.
    public mutating func begin(_ type: FourCC) {
        open.append(writer.count)
        writer.writeUInt32(0)
        writer.writeUInt32(type.rawValue)
    }

    /// Closes the innermost open box.
    public mutating func end() {
        guard let start = open.popLast() else { return }
        writer.patchUInt32(UInt32(truncatingIfNeeded: writer.count - start), at: start)
    }

    /// Reserves room for `count` more bytes.
    public mutating func reserve(_ count: Int) { writer.reserve(count) }

    /// Appends a 8-bit value.
    public mutating func u8(_ value: UInt8) { writer.writeUInt8(value) }
    /// Appends a 16-bit value.
    public mutating func u16(_ value: UInt16) { writer.writeUInt16(value) }
    /// Appends a 24-bit value.
    public mutating func u24(_ value: UInt32) { writer.writeUInt24(value) }
    /// Appends a 32-bit value.
    public mutating func u32(_ value: UInt32) { writer.writeUInt32(value) }
    /// Appends a 64-bit value.
    public mutating func u64(_ value: UInt64) { writer.writeUInt64(value) }
    /// Appends a four-character code.
    public mutating func fourCC(_ value: FourCC) { writer.writeUInt32(value.rawValue) }
    /// Appends raw bytes.
    public mutating func bytes<S: Sequence>(_ data: S) where S.Element == UInt8 { writer.writeBytes(data) }
    /// Appends `count` zero bytes.
    public mutating func zeros(_ count: Int) { writer.writeBytes(repeatElement(0, count: count)) }
    /// Overwrites a 32-bit value written earlier.
    public mutating func patchUInt32(_ value: UInt32, at offset: Int) { writer.patchUInt32(value, at: offset) }
}
