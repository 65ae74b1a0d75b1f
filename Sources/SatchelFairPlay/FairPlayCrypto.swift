import Crypto
import CryptoExtras
import Foundation
import SatchelBytes
import SatchelProtection

/// The cryptographic primitives FairPlay uses, wrapped so that failures become
/// ``FairPlayError`` values that name the operation and never the key.
enum FairPlayCrypto {
    /// AES-128-CBC without padding; `data` must be whole blocks.
    static func cbcEncrypt(_ data: [UInt8], key: [UInt8], iv: [UInt8]) throws(FairPlayError) -> [UInt8] {
        guard data.count % 16 == 0 else { throw .payloadNotBlockAligned(length: data.count) }
        var bytes = data
        do { try BlockCipher.cbc(&bytes, 0..<bytes.count, key: SymmetricKey(data: key), iv: iv, encrypt: true) } catch { throw .cryptoFailure("AES-CBC encryption") }
        return bytes
    }

    /// AES-128-CBC decryption without padding; `data` must be whole blocks.
    static func cbcDecrypt<Bytes: DataProtocol>(_ data: Bytes, key: [UInt8], iv: [UInt8]) throws(FairPlayError) -> [UInt8] {
        guard data.count % 16 == 0 else { throw .payloadNotBlockAligned(length: data.count) }
        var bytes = Array(data)
        do { try BlockCipher.cbc(&bytes, 0..<bytes.count, key: SymmetricKey(data: key), iv: iv, encrypt: false) } catch { throw .cryptoFailure("AES-CBC decryption") }
        return bytes
    }

    /// AES-128-ECB encryption of one 16-byte block.
    static func ecbEncryptBlock(_ block: [UInt8], key: [UInt8]) throws(FairPlayError) -> [UInt8] {
        guard block.count == 16 else { throw .invalidLength(what: "AES block", expected: 16, actual: block.count) }
        var out = block
        do {
            try AES.permute(&out, key: SymmetricKey(data: key))
        } catch {
            throw .cryptoFailure("AES-ECB encryption")
        }
        return out
    }

    /// AES-128-ECB decryption of one 16-byte block.
    static func ecbDecryptBlock(_ block: [UInt8], key: [UInt8]) throws(FairPlayError) -> [UInt8] {
        guard block.count == 16 else { throw .invalidLength(what: "AES block", expected: 16, actual: block.count) }
        var out = block
        do {
            try AES.inversePermute(&out, key: SymmetricKey(data: key))
        } catch {
            throw .cryptoFailure("AES-ECB decryption")
        }
        return out
    }

    /// SHA-1 digest.
    static func sha1<D: DataProtocol>(_ data: D) -> [UInt8] {
        Array(Insecure.SHA1.hash(data: data))
    }

    /// The anti-replay key: AES-ECB of the AR seed under the first 16 bytes of SHA-1(R1).
    static func antiReplayKey(r1: [UInt8], seed: [UInt8]) throws(FairPlayError) -> [UInt8] {
        let arKey = Array(sha1(r1).prefix(16))
        return try ecbEncryptBlock(seed, key: arKey)
    }
}
