import Crypto
import Foundation
import SatchelSystem
import SatchelBytes

/// The key-encryption key (KEK): seals content keys at rest with AES-256-GCM, bound to their key ID.
/// The database alone never reveals a content key.
public struct KeyEncryptionKey: Sendable {
    private let key: SymmetricKey

    /// Wraps 32 bytes.
    public init(_ bytes: SecretBytes) throws(LicensingError) {
        guard bytes.count == 32 else { throw .configuration("the key-encryption key must be 32 bytes (64 hex digits)") }
        key = SymmetricKey(data: bytes.bytes)
    }

    /// Loads the KEK: `SATCHEL_KEK` (hex) in the environment, else `file` (64 hex digits or 32 raw bytes),
    /// else `<dataDirectory>/kek.key`, created with mode 0600 on first use.
    public static func load(file: String?, dataDirectory: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(LicensingError) -> (kek: KeyEncryptionKey, created: String?) {
        if let hex = environment["SATCHEL_KEK"] {
            guard let bytes = try? Hex.decode(hex.trimmingCharacters(in: .whitespacesAndNewlines), count: 32) else {
                throw .configuration("SATCHEL_KEK must be 64 hex digits")
            }
            return (try KeyEncryptionKey(SecretBytes(bytes)), nil)
        }
        let path = file ?? (dataDirectory as NSString).appendingPathComponent("kek.key")
        if let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if let bytes = try? Hex.decode(text, count: 32) { return (try KeyEncryptionKey(SecretBytes(bytes)), nil) }
            if data.count == 32 { return (try KeyEncryptionKey(SecretBytes(Array(data))), nil) }
            throw .configuration("\(path) must hold 64 hex digits or 32 bytes")
        }
        guard file == nil else { throw .configuration("cannot read the key-encryption key file \(path)") }
        let bytes = SecureRandom.bytes(32)
        do {
            try PrivateFiles.folder(dataDirectory)
        } catch {
            throw .configuration("cannot create the data directory \(dataDirectory) (owner only): \(error.description)")
        }
        do throws(SystemError) {
            try AtomicFile.write(Array(Hex.encode(bytes).utf8), to: path, mode: 0o600, replace: false)
        } catch where error.errno == EEXIST {
            return try load(file: path, dataDirectory: dataDirectory)  // another process made it first: use that one
        } catch {
            throw .configuration(error.description)
        }
        return (try KeyEncryptionKey(SecretBytes(bytes)), path)
    }

    /// Seals a content key; the key ID is authenticated, so a sealed key cannot be moved to another ID.
    public func seal(_ contentKey: SecretBytes, keyID: String) throws(LicensingError) -> [UInt8] {
        do {
            guard let combined = try AES.GCM.seal(contentKey.bytes, using: key, authenticating: Array(keyID.utf8)).combined else {
                throw LicensingError.storage("sealing failed")
            }
            return Array(combined)
        } catch {
            throw .storage("cannot seal a content key")
        }
    }

    /// Opens a sealed content key.
    public func open(_ sealed: [UInt8], keyID: String) throws(LicensingError) -> SecretBytes {
        do {
            let box = try AES.GCM.SealedBox(combined: sealed)
            return SecretBytes(Array(try AES.GCM.open(box, using: key, authenticating: Array(keyID.utf8))))
        } catch {
            throw .configuration("a stored key does not open with this key-encryption key (wrong KEK?)")
        }
    }
}
