import Foundation
import SatchelBytes

/// A 16-byte key ID (KID), shown as hex or as a UUID.
public struct KeyID: Sendable, Hashable, CustomStringConvertible, Codable {
    /// The 16 bytes.
    public let bytes: [UInt8]

    /// Wraps 16 bytes.
    public init(_ bytes: [UInt8]) throws(ProtectionError) {
        guard bytes.count == 16 else { throw .invalidLength(what: "key ID", expected: 16, actual: bytes.count) }
        self.bytes = bytes
    }

    /// Parses hex, with or without UUID dashes.
    public init(hex: String) throws(ProtectionError) {
        guard let bytes = try? Hex.decode(hex.replacingOccurrences(of: "-", with: ""), count: 16) else {
            throw .invalidLength(what: "key ID (32 hex digits)", expected: 16, actual: hex.count / 2)
        }
        self.bytes = bytes
    }

    /// A random key ID.
    public static func random() -> KeyID { KeyID(unchecked: SecureRandom.bytes(16)) }

    private init(unchecked bytes: [UInt8]) { self.bytes = bytes }

    /// Lower-case hex.
    public var hex: String { Hex.encode(bytes) }

    /// 8-4-4-4-12 UUID form, as DASH's cenc:default_KID writes it.
    public var uuidString: String {
        let h = hex
        let i = h.startIndex
        func part(_ from: Int, _ to: Int) -> Substring { h[h.index(i, offsetBy: from)..<h.index(i, offsetBy: to)] }
        return "\(part(0, 8))-\(part(8, 12))-\(part(12, 16))-\(part(16, 20))-\(part(20, 32))"
    }

    /// Base64url without padding, as W3C Clear Key writes it.
    public var base64URL: String { Base64URL.encode(bytes) }

    public var description: String { hex }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do { self = try KeyID(hex: text) } catch { throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "\(error)")) }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

/// A content key with its ID and IV: what encrypts one asset (or one rotation period).
public struct ContentKey: Sendable, Equatable {
    /// The key ID.
    public var keyID: KeyID
    /// The 16-byte AES key. Never printed.
    public var key: SecretBytes
    /// The 16-byte IV (constant IV for cbcs and SAMPLE-AES, explicit IV for AES-128).
    public var iv: [UInt8]

    /// Creates a key; key and IV must be 16 bytes.
    public init(keyID: KeyID, key: SecretBytes, iv: [UInt8]) throws(ProtectionError) {
        guard key.count == 16 else { throw .invalidLength(what: "content key", expected: 16, actual: key.count) }
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        self.keyID = keyID
        self.key = key
        self.iv = iv
    }

    /// A fresh random key ID, key and IV from the secure generator.
    public static func random() -> ContentKey {
        var pool = SecureRandom.Pool(capacity: 48)
        // Lengths are right by construction.
        return (try? ContentKey(keyID: KeyID(pool.take(16)), key: SecretBytes(pool.take(16)), iv: pool.take(16)))
            ?? ContentKey.fallback
    }

    private static var fallback: ContentKey {
        ContentKey(uncheckedKeyID: KeyID.random(), key: SecretBytes.random(16), iv: SecureRandom.bytes(16))
    }

    private init(uncheckedKeyID: KeyID, key: SecretBytes, iv: [UInt8]) {
        self.keyID = uncheckedKeyID
        self.key = key
        self.iv = iv
    }
}
