import Foundation
import SatchelSystem
#if canImport(Security)
import Security
#endif

/// The license store's rollback anchor, kept apart from the store: the highest counter of the sealed device state
/// the device has written. A store whose state is behind its anchor was copied back from an earlier time (to
/// bring back a released license) and is refused. Software alone cannot tell a copy of the whole data directory,
/// anchor included, from the real one: the license server's records catch that at the next sync.
public protocol StoreAnchoring: Sendable {
    /// The counter; nil when no anchor has been written yet. Throws when one exists but does not open (edited).
    func read() throws(AgentError) -> UInt64?
    /// Records `counter` (durably, before it returns).
    func write(_ counter: UInt64) throws(AgentError)
}

/// The anchor as `store-anchor` beside the device key (mode 0600), sealed with a key derived from the device key.
struct FileStoreAnchor: StoreAnchoring {
    let path: String
    let seal: StateSeal

    init(dataDirectory: String, seal: StateSeal) {
        path = (dataDirectory as NSString).appendingPathComponent("store-anchor")
        self.seal = seal
    }

    func read() throws(AgentError) -> UInt64? {
        guard let data = FileManager.default.contents(atPath: path) else {
            guard !FileManager.default.fileExists(atPath: path) else { throw .storage("cannot read \(path)") }
            return nil
        }
        guard let counter = seal.open(UInt64.self, String(decoding: data, as: UTF8.self)) else {
            throw .storeTampered("its anchor does not open")
        }
        return counter
    }

    func write(_ counter: UInt64) throws(AgentError) {
        do {
            try AtomicFile.write(Array(try seal.seal(counter).utf8), to: path, mode: PrivateFiles.fileMode)
        } catch let error as AgentError {
            throw error
        } catch {
            throw .storage("cannot write the store's anchor: \(error)")
        }
    }
}

#if canImport(Security)
/// The anchor in the platform keychain, beside the device key's item (service `dev.satchel.agent.anchor`, one
/// account per data directory, this device only): restoring the app's files does not bring back an older anchor.
struct KeychainStoreAnchor: StoreAnchoring {
    static let service = "dev.satchel.agent.anchor"
    let account: String
    let seal: StateSeal

    init(dataDirectory: String, seal: StateSeal) {
        account = (dataDirectory as NSString).standardizingPath
        self.seal = seal
    }

    func read() throws(AgentError) -> UInt64? {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Self.service, kSecAttrAccount as String: account,
            kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw .storage("the keychain refused the store's anchor (status \(status))") }
        guard let counter = seal.open(UInt64.self, String(decoding: data, as: UTF8.self)) else { throw .storeTampered("its anchor does not open") }
        return counter
    }

    func write(_ counter: UInt64) throws(AgentError) {
        let data = Data(try seal.seal(counter).utf8)
        let match: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: Self.service,
                                    kSecAttrAccount as String: account]
        var status = SecItemUpdate(match as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        if status == errSecItemNotFound {
            var attributes = match
            attributes[kSecValueData as String] = data
            attributes[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            status = SecItemAdd(attributes as CFDictionary, nil)
        }
        guard status == errSecSuccess else { throw .storage("the keychain refused the store's anchor (status \(status))") }
    }
}
#endif

extension StateSeal {
    /// The platform's anchor for `dataDirectory`: the keychain on Apple platforms, a sealed file elsewhere.
    func platformAnchor(dataDirectory: String) -> any StoreAnchoring {
        #if canImport(Security)
        return KeychainStoreAnchor(dataDirectory: dataDirectory, seal: self)
        #else
        return FileStoreAnchor(dataDirectory: dataDirectory, seal: self)
        #endif
    }
}
