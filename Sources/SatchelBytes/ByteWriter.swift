/// An append-only big-endian byte buffer, the counterpart of ``ByteReader``.
public struct ByteWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// Creates an empty writer, optionally reserving capacity.
    public init(capacity: Int = 0) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// An empty writer that takes over `buffer`'s storage (cleared, capacity kept), so a caller
    /// writing many similar messages allocates once.
    public init(reusing buffer: inout [UInt8]) {
        bytes = []
        swap(&bytes, &buffer)
        bytes.removeAll(keepingCapacity: true)
    }

    /// Moves the written bytes into `buffer` without copying; the writer is left empty.
    public mutating func finish(into buffer: inout [UInt8]) {
        buffer = []
        swap(&bytes, &buffer)
    }

    /// The number of bytes written.
    public var count: Int { bytes.count }

    /// Reserves room for `count` more bytes.
    public mutating func reserve(_ count: Int) { bytes.reserveCapacity(bytes.count + count) }

    /// Appends one byte.
    public mutating func writeUInt8(_ value: UInt8) { bytes.append(value) }

    /// Appends a big-endian 16-bit integer.
    public mutating func writeUInt16(_ value: UInt16) { writeInteger(UInt64(value), byteCount: 2) }

    /// Appends a big-endian 24-bit integer (the top byte of `value` is dropped).
    public mutating func writeUInt24(_ value: UInt32) { writeInteger(UInt64(value), byteCount: 3) }

    /// Appends a big-endian 32-bit integer.
    public mutating func writeUInt32(_ value: UInt32) { writeInteger(UInt64(value), byteCount: 4) }

    /// Appends a big-endian 64-bit integer.
    public mutating func writeUInt64(_ value: UInt64) { writeInteger(value, byteCount: 8) }

    /// Appends the low `byteCount` bytes (at most 8) of `value`, most significant first.
    public mutating func writeInteger(_ value: UInt64, byteCount: Int) {
        var shift = (min(max(byteCount, 0), 8) - 1) * 8
        while shift >= 0 {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }

    /// Overwrites four bytes at `offset` with a big-endian 32-bit value (no-op when out of range).
    public mutating func patchUInt32(_ value: UInt32, at offset: Int) {
        guard offset >= 0, offset + 4 <= bytes.count else { return }
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(index))) }
    }

    /// Appends raw bytes.
    public mutating func writeBytes<S: Sequence>(_ data: S) where S.Element == UInt8 {
        bytes.append(contentsOf: data)
    }
}
