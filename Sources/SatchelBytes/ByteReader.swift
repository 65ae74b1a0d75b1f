/// A bounds-checked, big-endian cursor over bytes.
///
/// Every read checks the remaining length first and throws ``ByteReaderError``
/// instead of trapping, so hostile input can never crash a parser built on it.
public struct ByteReader: Sendable {
    /// The bytes being read.
    public let bytes: [UInt8]
    /// The offset of the next byte to read.
    public private(set) var offset: Int
    /// The offset one past the last byte this reader may read.
    public let end: Int

    /// Creates a reader positioned at the first byte.
    public init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.offset = 0
        self.end = bytes.count
    }

    /// Creates a reader limited to `range` of `bytes` (clamped to the array), without copying.
    public init(_ bytes: [UInt8], range: Range<Int>) {
        self.bytes = bytes
        let lower = min(max(range.lowerBound, 0), bytes.count)
        self.offset = lower
        self.end = max(lower, min(range.upperBound, bytes.count))
    }

    /// A reader over the next `count` bytes, which this reader skips.
    public mutating func subReader(_ count: Int) throws(ByteReaderError) -> ByteReader {
        try require(count)
        defer { offset += count }
        return ByteReader(bytes, range: offset..<(offset + count))
    }

    /// Moves to an absolute offset within this reader's range.
    public mutating func seek(to position: Int) throws(ByteReaderError) {
        guard position >= 0, position <= end else { throw .invalidLength(position, at: offset) }
        offset = position
    }

    /// Creates a reader over any byte sequence.
    public init<S: Sequence>(bytes: S) where S.Element == UInt8 {
        self.init(Array(bytes))
    }

    /// The number of bytes left to read.
    public var remaining: Int { end - offset }

    /// True when every byte has been read.
    public var isAtEnd: Bool { offset >= end }

    /// Throws unless at least `count` bytes remain.
    public func require(_ count: Int) throws(ByteReaderError) {
        guard count >= 0 else { throw .invalidLength(count, at: offset) }
        guard count <= remaining else {
            throw .truncated(needed: count, available: remaining, at: offset)
        }
    }

    /// Reads one byte.
    public mutating func readUInt8() throws(ByteReaderError) -> UInt8 {
        try require(1)
        let value = bytes[offset]
        offset += 1
        return value
    }

    /// Reads a big-endian 16-bit integer.
    public mutating func readUInt16() throws(ByteReaderError) -> UInt16 {
        UInt16(truncatingIfNeeded: try readInteger(byteCount: 2))
    }

    /// Reads a big-endian 24-bit integer.
    public mutating func readUInt24() throws(ByteReaderError) -> UInt32 {
        UInt32(truncatingIfNeeded: try readInteger(byteCount: 3))
    }

    /// Reads a big-endian 32-bit integer.
    public mutating func readUInt32() throws(ByteReaderError) -> UInt32 {
        UInt32(truncatingIfNeeded: try readInteger(byteCount: 4))
    }

    /// Reads a big-endian 64-bit integer.
    public mutating func readUInt64() throws(ByteReaderError) -> UInt64 {
        try readInteger(byteCount: 8)
    }

    /// Reads `byteCount` (at most 8) bytes as one big-endian unsigned integer.
    public mutating func readInteger(byteCount: Int) throws(ByteReaderError) -> UInt64 {
        guard (0...8).contains(byteCount) else { throw .invalidLength(byteCount, at: offset) }
        try require(byteCount)
        let start = offset
        let value = bytes.withUnsafeBufferPointer { buffer in
            var value: UInt64 = 0
            for index in start..<(start + byteCount) {  // in bounds: checked by require above
                value = (value << 8) | UInt64(buffer[index])
            }
            return value
        }
        offset += byteCount
        return value
    }

    /// Reads exactly `count` bytes.
    public mutating func readBytes(_ count: Int) throws(ByteReaderError) -> [UInt8] {
        try require(count)
        let slice = Array(bytes[offset..<(offset + count)])
        offset += count
        return slice
    }

    /// Reads every remaining byte.
    public mutating func readRemaining() -> [UInt8] {
        let slice = Array(bytes[min(offset, end)..<end])
        offset = end
        return slice
    }

    /// The next `count` bytes as a slice of the underlying array (no copy).
    public mutating func readSlice(_ count: Int) throws(ByteReaderError) -> ArraySlice<UInt8> {
        try require(count)
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    /// Skips `count` bytes.
    public mutating func skip(_ count: Int) throws(ByteReaderError) {
        try require(count)
        offset += count
    }

    /// Returns the next `count` bytes without consuming them.
    public func peekBytes(_ count: Int) throws(ByteReaderError) -> [UInt8] {
        try require(count)
        return Array(bytes[offset..<(offset + count)])
    }
}

/// Why a ``ByteReader`` refused to read.
public enum ByteReaderError: ProblemConvertible, Equatable {
    /// `input-truncated` or `invalid-length`.
    public var code: String {
        switch self {
        case .truncated: return "input-truncated"
        case .invalidLength: return "invalid-length"
        }
    }

    /// The bytes came from outside: 400.
    public var httpStatus: Int { 400 }

    /// Fewer bytes remained than a field needs.
    case truncated(needed: Int, available: Int, at: Int)
    /// A negative or impossible length was asked for.
    case invalidLength(Int, at: Int)

    public var description: String {
        switch self {
        case let .truncated(needed, available, offset):
            return "input ends early: \(needed) bytes needed at offset \(offset), \(available) left"
        case let .invalidLength(length, offset):
            return "invalid length \(length) at offset \(offset)"
        }
    }
}
