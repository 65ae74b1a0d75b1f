import Crypto
import Foundation
import SatchelSystem
#if canImport(Security)
import Security
#endif

/// Where the device's private key is kept: a file of the data directory (mode 0600) on Linux, the platform
/// keychain on Apple platforms. A vault makes the key on first use and answers the same key afterwards, also
/// when two processes start at once.
public protocol DeviceKeyVault: Sendable {
    /// The device key, made and kept on first use.
    func deviceKey() throws(AgentError) -> P256.Signing.PrivateKey
}

/// The key as `device-key.pem` (PKCS#8 PEM, mode 0600) in the data directory.
public struct FileKeyVault: DeviceKeyVault {
    /// The key file.
    public let path: String

    /// A vault in `dataDirectory`.
    public init(dataDirectory: String) {
        path = (dataDirectory as NSString).appendingPathComponent("device-key.pem")
    }

    public func deviceKey() throws(AgentError) -> P256.Signing.PrivateKey {
        if let pem = try? String(contentsOfFile: path, encoding: .utf8) {
            guard let loaded = try? P256.Signing.PrivateKey(pemRepresentation: pem) else { throw .storage("\(path) is not a P-256 private key") }
            return loaded
        }
        let made = P256.Signing.PrivateKey()
        do throws(SystemError) {
            try AtomicFile.write(Array(made.pemRepresentation.utf8), to: path, mode: 0o600, replace: false)
            return made
        } catch where error.errno == EEXIST {
            return try deviceKey()  // another process made it first
        } catch {
            throw .storage("cannot write the device key: \(error.description)")
        }
    }
}

#if canImport(Security)
/// The key in the platform keychain (a generic password item of service `dev.satchel.agent`, one account per
/// data directory, readable only on this device after its first unlock).
public struct KeychainKeyVault: DeviceKeyVault {
    /// The item's service.
    public static let service = "dev.satchel.agent"
    /// The item's account: the data directory's path.
    public let account: String

    /// A vault for `dataDirectory`.
    public init(dataDirectory: String) {
        account = (dataDirectory as NSString).standardizingPath
    }

    public func deviceKey() throws(AgentError) -> P256.Signing.PrivateKey {
        if let existing = try read() { return existing }
        let made = P256.Signing.PrivateKey()
        let attributes: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Self.service, kSecAttrAccount as String: account,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, kSecValueData as String: made.rawRepresentation,
        ]
        let status = SecItemAdd(attributes as CFDictionary, nil)
        if status == errSecDuplicateItem, let existing = try read() { return existing }  // another process made it first
        guard status == errSecSuccess else { throw .storage("the keychain refused the device key (status \(status))") }
        return made
    }

    private func read() throws(AgentError) -> P256.Signing.PrivateKey? {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Self.service, kSecAttrAccount as String: account,
            kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data, let key = try? P256.Signing.PrivateKey(rawRepresentation: data) else {
            throw .storage("the device key in the keychain cannot be read (status \(status))")
        }
        return key
    }
}
#endif

extension DeviceKeyVault where Self == FileKeyVault {
    /// The platform's vault for `dataDirectory`: the keychain on Apple platforms, a 0600 file elsewhere.
    public static func platform(dataDirectory: String) -> any DeviceKeyVault {
        #if canImport(Security)
        return KeychainKeyVault(dataDirectory: dataDirectory)
        #else
        return FileKeyVault(dataDirectory: dataDirectory)
        #endif
    }
}
