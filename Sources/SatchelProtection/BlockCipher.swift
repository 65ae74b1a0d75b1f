import Crypto
import CryptoExtras
import Foundation
import SatchelBytes

/// AES-128 primitives for content protection; failures become ``ProtectionError`` values
/// that never name the key.
enum BlockCipher {
    static func cbcEncrypt(_ data: [UInt8], key: SymmetricKey, iv: [UInt8], padding: Bool = false) throws(ProtectionError) -> [UInt8] {
        if data.isEmpty && !padding { return [] }
        do {
            return Array(try AES._CBC.encrypt(data, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: !padding))
        } catch {
            throw .cryptoFailure("AES-CBC encryption")
        }
    }

    static func cbcDecrypt(_ data: [UInt8], key: SymmetricKey, iv: [UInt8], padding: Bool = false) throws(ProtectionError) -> [UInt8] {
        if data.isEmpty && !padding { return [] }
        guard data.count % 16 == 0, !data.isEmpty else { throw .malformed("AES-CBC data of \(data.count) bytes is not whole blocks") }
        do {
            return Array(try AES._CBC.decrypt(data, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: !padding))
        } catch {
            throw padding ? .malformed("bad PKCS#7 padding (wrong key or IV, or damaged data)") : .cryptoFailure("AES-CBC decryption")
        }
    }

    /// AES-CTR with a 16-byte initial counter block; encryption and decryption are the same.
    static func ctr(_ data: [UInt8], key: SymmetricKey, counter: [UInt8]) throws(ProtectionError) -> [UInt8] {
        if data.isEmpty { return [] }
        do {
            return Array(try AES._CTR.encrypt(data, using: key, nonce: AES._CTR.Nonce(nonceBytes: counter)))
        } catch {
            throw .cryptoFailure("AES-CTR")
        }
    }
}
