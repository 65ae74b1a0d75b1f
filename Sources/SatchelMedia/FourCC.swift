/// A four-character code: an ISO BMFF box type, a sample entry, a brand.
public struct FourCC: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The code as a big-endian 32-bit number.
    public let rawValue: UInt32

    /// Wraps a raw code.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// A code from four ASCII characters (extra characters are ignored, missing ones are spaces).
    public init(_ text: String) {
        var value: UInt32 = 0
        var bytes = Array(text.utf8.prefix(4))
        while bytes.count < 4 { bytes.append(0x20) }
        for byte in bytes { value = value << 8 | UInt32(byte) }
        rawValue = value
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The four bytes.
    public var bytes: [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (24 - 8 * UInt32($0))) } }

    /// Printable form; non-printable bytes are shown as '.'.
    public var description: String {
        String(decoding: bytes.map { (0x20...0x7e).contains($0) ? $0 : 0x2e }, as: UTF8.self)
    }
}
