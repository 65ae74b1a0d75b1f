/// Hexadecimal encoding and strict decoding of byte strings.
public enum Hex {
    private static let digits = Array("0123456789abcdef".utf8)

    /// Lower-case hex of `bytes`, no separators.
    public static func encode<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes hex; spaces, colons and a leading `0x` are ignored.
    /// Throws ``HexError`` on any other character or an odd digit count.
    public static func decode(_ text: String) throws(HexError) -> [UInt8] {
        var cleaned = Substring(text)
        if cleaned.hasPrefix("0x") || cleaned.hasPrefix("0X") { cleaned = cleaned.dropFirst(2) }
        var nibbles: [UInt8] = []
        nibbles.reserveCapacity(cleaned.utf8.count)
        for char in cleaned.utf8 {
            switch char {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibbles.append(char - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibbles.append(char - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibbles.append(char - UInt8(ascii: "A") + 10)
            case UInt8(ascii: " "), UInt8(ascii: ":"), UInt8(ascii: "\n"), UInt8(ascii: "\t"): continue
            default: throw .invalidCharacter
            }
        }
        guard nibbles.count % 2 == 0 else { throw .oddLength }
        var out: [UInt8] = []
        out.reserveCapacity(nibbles.count / 2)
        var index = 0
        while index + 1 < nibbles.count {
            out.append(nibbles[index] << 4 | nibbles[index + 1])
            index += 2
        }
        return out
    }

    /// Decodes hex that must be exactly `count` bytes long.
    public static func decode(_ text: String, count: Int) throws(HexError) -> [UInt8] {
        let bytes = try decode(text)
        guard bytes.count == count else { throw .wrongLength(expected: count, actual: bytes.count) }
        return bytes
    }
}

/// Why a hex string was refused. The cases never echo the input: it may be a secret.
public enum HexError: ProblemConvertible, Equatable {
    /// `hex-invalid-character`, `hex-odd-length` or `hex-wrong-length`.
    public var code: String {
        switch self {
        case .invalidCharacter: return "hex-invalid-character"
        case .oddLength: return "hex-odd-length"
        case .wrongLength: return "hex-wrong-length"
        }
    }

    /// Hex comes from a request or an argument: 400.
    public var httpStatus: Int { 400 }

    /// A character that is not a hex digit.
    case invalidCharacter
    /// An odd number of hex digits.
    case oddLength
    /// The decoded value has the wrong number of bytes.
    case wrongLength(expected: Int, actual: Int)

    public var description: String {
        switch self {
        case .invalidCharacter: return "not a hex string (only 0-9, a-f allowed)"
        case .oddLength: return "hex string has an odd number of digits"
        case let .wrongLength(expected, actual): return "expected \(expected) bytes of hex, got \(actual)"
        }
    }
}
