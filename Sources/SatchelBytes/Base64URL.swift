/// Base64url without padding (RFC 4648 §5), as W3C Clear Key and JWK use. Table-driven over the bytes: a
/// license server encodes and decodes several of these per request.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each ASCII byte's 6-bit value; 0xFF for a byte outside both alphabets. `+` and `/` (standard base64) are
    /// read as `-` and `_` are.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// Encodes without padding.
    public static func encode(_ bytes: [UInt8]) -> String {
        let count = bytes.count / 3 * 4 + [0, 2, 3][bytes.count % 3]
        return String(unsafeUninitializedCapacity: count) { output in
            var out = 0
            var index = 0
            while index + 3 <= bytes.count {
                let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                output[out] = alphabet[Int(group >> 18)]
                output[out + 1] = alphabet[Int(group >> 12 & 63)]
                output[out + 2] = alphabet[Int(group >> 6 & 63)]
                output[out + 3] = alphabet[Int(group & 63)]
                out += 4
                index += 3
            }
            switch bytes.count - index {
            case 1:
                let group = UInt32(bytes[index]) << 16
                output[out] = alphabet[Int(group >> 18)]
                output[out + 1] = alphabet[Int(group >> 12 & 63)]
                out += 2
            case 2:
                let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                output[out] = alphabet[Int(group >> 18)]
                output[out + 1] = alphabet[Int(group >> 12 & 63)]
                output[out + 2] = alphabet[Int(group >> 6 & 63)]
                out += 3
            default:
                break
            }
            return out
        }
    }

    /// Decodes with or without padding (either alphabet); nil for invalid input: a byte outside the alphabets,
    /// padding anywhere but at the end or beyond a whole group, or a length no encoding has.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var utf8 = Array(text.utf8)
        if utf8.last == UInt8(ascii: "=") {
            var padding = 0
            while utf8.last == UInt8(ascii: "=") {
                utf8.removeLast()
                padding += 1
            }
            guard padding <= 2, (utf8.count + padding) % 4 == 0 else { return nil }
        }
        guard utf8.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 4 * 3 + 2)
        var group: UInt32 = 0
        var filled = 0
        for character in utf8 {
            let value = values[Int(character)]
            guard value != 0xFF else { return nil }
            group = group << 6 | UInt32(value)
            filled += 1
            if filled == 4 {
                bytes.append(UInt8(truncatingIfNeeded: group >> 16))
                bytes.append(UInt8(truncatingIfNeeded: group >> 8))
                bytes.append(UInt8(truncatingIfNeeded: group))
                group = 0
                filled = 0
            }
        }
        switch filled {
        case 2:
            bytes.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:
            bytes.append(UInt8(truncatingIfNeeded: group >> 10))
            bytes.append(UInt8(truncatingIfNeeded: group >> 2))
        default:
            break
        }
        return bytes
    }
}
