/// A bounds-checked reader of big-endian bit fields and Exp-Golomb codes.
public struct BitReader: Sendable {
    private let bytes: [UInt8]
    /// The position of the next bit.
    public private(set) var bitOffset: Int

    /// Creates a reader at the first bit of `bytes`.
    public init<S: Sequence>(_ bytes: S) where S.Element == UInt8 {
        self.bytes = Array(bytes)
        self.bitOffset = 0
    }

    /// Bits left.
    public var remainingBits: Int { bytes.count * 8 - bitOffset }

    /// Reads `count` (at most 64) bits as an unsigned integer.
    public mutating func read(_ count: Int) throws(ByteReaderError) -> UInt64 {
        guard (0...64).contains(count) else { throw .invalidLength(count, at: bitOffset / 8) }
        guard count <= remainingBits else { throw .truncated(needed: (count + 7) / 8, available: remainingBits / 8, at: bitOffset / 8) }
        var value: UInt64 = 0
        for _ in 0..<count {
            let bit = (bytes[bitOffset >> 3] >> (7 - UInt8(bitOffset & 7))) & 1
            value = value << 1 | UInt64(bit)
            bitOffset += 1
        }
        return value
    }

    /// Reads one bit as a Bool.
    public mutating func readFlag() throws(ByteReaderError) -> Bool { try read(1) == 1 }

    /// Skips `count` bits.
    public mutating func skip(_ count: Int) throws(ByteReaderError) {
        guard count >= 0, count <= remainingBits else { throw .truncated(needed: count / 8, available: remainingBits / 8, at: bitOffset / 8) }
        bitOffset += count
    }

    /// Reads an unsigned Exp-Golomb code (ue(v)).
    public mutating func readUnsignedExpGolomb() throws(ByteReaderError) -> UInt64 {
        var zeros = 0
        while try read(1) == 0 {
            zeros += 1
            guard zeros < 32 else { throw .invalidLength(zeros, at: bitOffset / 8) }
        }
        return (UInt64(1) << UInt64(zeros)) - 1 + (try read(zeros))
    }

    /// Reads a signed Exp-Golomb code (se(v)).
    public mutating func readSignedExpGolomb() throws(ByteReaderError) -> Int64 {
        let code = try readUnsignedExpGolomb()
        return code % 2 == 1 ? Int64((code + 1) / 2) : -Int64(code / 2)
    }
}
