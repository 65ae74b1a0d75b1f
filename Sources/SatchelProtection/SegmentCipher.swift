import Crypto
import SatchelBytes

/// HLS METHOD=AES-128: the whole segment AES-128-CBC encrypted with PKCS#7 padding.
public struct SegmentCipher: Sendable {
    private let key: SymmetricKey

    /// A cipher for `key` (16 bytes).
    public init(key: SecretBytes) throws(ProtectionError) {
        guard key.count == 16 else { throw .invalidLength(what: "content key", expected: 16, actual: key.count) }
        self.key = SymmetricKey(data: key.bytes)
    }

    /// Encrypts a whole segment.
    public func encrypt(_ segment: [UInt8], iv: [UInt8]) throws(ProtectionError) -> [UInt8] {
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        return try BlockCipher.cbcEncrypt(segment, key: key, iv: iv, padding: true)
    }

    /// Decrypts a whole segment and removes the padding.
    public func decrypt(_ segment: [UInt8], iv: [UInt8]) throws(ProtectionError) -> [UInt8] {
        guard iv.count == 16 else { throw .invalidLength(what: "IV", expected: 16, actual: iv.count) }
        return try BlockCipher.cbcDecrypt(segment, key: key, iv: iv, padding: true)
    }

    /// The IV HLS implies for a segment without an IV attribute: its media sequence number, big-endian.
    public static func sequenceIV(_ sequenceNumber: UInt64) -> [UInt8] {
        var writer = ByteWriter(capacity: 16)
        writer.writeUInt64(0)
        writer.writeUInt64(sequenceNumber)
        return writer.bytes
    }
}
