import Crypto
import Foundation
import SatchelSystem
#if canImport(Security)
import Security
#endif

/// Where the device's private key is kept: a file of the data directory (mode 0600) on Linux, the platform
/// keychain (under a stable name that outlives a reinstall) on Apple platforms. A vault makes the key on first use and answers the same key afterwards, also
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
/// The key in the platform keychain: a generic password item of service `dev.satchel.agent` and a stable account
/// (`device-key` unless the app names another), readable only on this device after its first unlock. The item
/// outlives the app's files, so a reinstalled app keeps its device ID; a key an earlier version kept under the data
/// directory's path is moved to the stable account on first use.
public struct KeychainKeyVault: DeviceKeyVault {
    /// The item's service.
    public static let service = "dev.satchel.agent"
    /// The default account.
    public static let defaultAccount = "device-key"
    /// The item's account.
    public let account: String
    private let lookup: StableDeviceKey<KeychainItems>

    /// A vault under `account` (an app with several agents names each); `dataDirectory` is where an earlier
    /// version's item (keyed by its path) may be found.
    public init(dataDirectory: String, account: String = KeychainKeyVault.defaultAccount) {
        self.account = account
        lookup = StableDeviceKey(items: KeychainItems(service: Self.service), account: account,
                                 legacyAccount: (dataDirectory as NSString).standardizingPath)
    }

    public func deviceKey() throws(AgentError) -> P256.Signing.PrivateKey {
        try lookup.deviceKey()
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
