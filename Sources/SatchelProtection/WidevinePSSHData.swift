/// The data of a Widevine `pssh` box: a `WidevinePsshData` protocol-buffer message. Its public fields are written
/// in field order as a protobuf encoder does: `key_ids` (2, bytes, repeated), `provider` (3, string), `content_id`
/// (4, bytes) and `protection_scheme` (9, the scheme's four-character code as a 32-bit integer).
public struct WidevinePSSHData: Sendable, Equatable {
    /// The key IDs.
    public var keyIDs: [KeyID]
    /// The content provider's name, when the license service wants it.
    public var provider: String?
    /// The content ID (an asset ID's bytes), when given.
    public var contentID: [UInt8]?
    /// The protection scheme's four-character code ("cenc", "cbcs").
    public var protectionScheme: String?

    /// A message with these fields.
    public init(keyIDs: [KeyID], provider: String? = nil, contentID: [UInt8]? = nil, protectionScheme: String? = nil) {
        self.keyIDs = keyIDs
        self.provider = provider
        self.contentID = contentID
        self.protectionScheme = protectionScheme
    }

    /// The encoded message.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        func varint(_ value: UInt64) {
            var rest = value
            repeat {
                let low = UInt8(rest & 0x7f)
                rest >>= 7
                out.append(rest == 0 ? low : low | 0x80)
            } while rest != 0
        }
        func field(_ number: UInt64, bytes: [UInt8]) {
            varint(number << 3 | 2)
            varint(UInt64(bytes.count))
            out += bytes
        }
        for kid in keyIDs { field(2, bytes: kid.bytes) }
        if let provider { field(3, bytes: Array(provider.utf8)) }
        if let contentID { field(4, bytes: contentID) }
        if let fourCC = protectionScheme.flatMap(Self.fourCC) {
            varint(9 << 3)
            varint(UInt64(fourCC))
        }
        return out
    }

    /// A `pssh` box (version 0, as Shaka Packager writes Widevine's: the key IDs are in the message) holding it.
    public var box: [UInt8] { PSSH.box(systemID: DRMSystem.widevine.systemID, keyIDs: [], data: encoded, version: 0) }

    /// Reads a message (bounded: at most 64 KiB, every length checked; unknown fields skipped).
    public init(decoding bytes: [UInt8]) throws(ProtectionError) {
        guard bytes.count <= 1 << 16 else { throw .malformed("Widevine pssh data of \(bytes.count) bytes") }
        self.init(keyIDs: [])
        var position = 0
        func varint() throws(ProtectionError) -> UInt64 {
            var value: UInt64 = 0
            for shift in stride(from: UInt64(0), to: 64, by: 7) {
                guard position < bytes.count else { throw .malformed("Widevine pssh data ends inside a number") }
                let byte = bytes[position]
                position += 1
                value |= UInt64(byte & 0x7f) << shift
                if byte & 0x80 == 0 { return value }
            }
            throw .malformed("Widevine pssh data has a number longer than 64 bits")
        }
        while position < bytes.count {
            let tag = try varint()
            let (number, wireType) = (tag >> 3, tag & 7)
            switch wireType {
            case 0:
                let value = try varint()
                if number == 9 { protectionScheme = Self.fourCC(UInt32(truncatingIfNeeded: value)) }
            case 2:
                let length = try varint()
                guard length <= UInt64(bytes.count - position) else { throw .malformed("Widevine pssh data field \(number) is cut short") }
                let value = Array(bytes[position..<(position + Int(length))])
                position += Int(length)
                switch number {
                case 2: keyIDs.append(try KeyID(value))
                case 3: provider = String(decoding: value, as: UTF8.self)
                case 4: contentID = value
                default: break
                }
            case 1, 5:
                let width = wireType == 1 ? 8 : 4
                guard width <= bytes.count - position else { throw .malformed("Widevine pssh data field \(number) is cut short") }
                position += width
            default:
                throw .malformed("Widevine pssh data has a field of wire type \(wireType)")
            }
        }
    }

    static func fourCC(_ text: String) -> UInt32? {
        let bytes = Array(text.utf8)
        guard bytes.count == 4 else { return nil }
        return bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// The four characters of a code, nil unless all are printable ASCII.
    static func fourCC(_ value: UInt32) -> String? {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32($0))) }
        guard bytes.allSatisfy({ (0x20...0x7e).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }
}
