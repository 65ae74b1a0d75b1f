import Crypto
import Foundation
#if canImport(Security)
import Security
#endif

/// Small secrets kept by account name: generic-password items of one keychain service on Apple platforms.
package protocol SecretItems: Sendable {
    /// The item of `account`, nil when there is none.
    func read(account: String) throws(AgentError) -> Data?
    /// Adds the item of `account`; false when one exists already (another process made it first).
    func add(account: String, data: Data) throws(AgentError) -> Bool
    /// Deletes the item of `account`, if any.
    func delete(account: String)
}

/// The device key as an item under a stable account name, so it survives what changes the data directory's path —
/// an app reinstalled or moved to another container — and the device keeps its ID (the server answers the same ID
/// for the same key). A key an earlier version kept under the data directory's path is moved to the stable name.
package struct StableDeviceKey<Items: SecretItems>: Sendable {
    /// Where the items are.
    package let items: Items
    /// The stable account.
    package let account: String
    /// The account an earlier version used (the data directory's path), if any.
    package let legacyAccount: String?

    /// A key kept in `items` under `account`, taken over from `legacyAccount` when only that one holds it.
    package init(items: Items, account: String, legacyAccount: String?) {
        (self.items, self.account, self.legacyAccount) = (items, account, legacyAccount)
    }

    /// The key: the stable item's; else the earlier version's, moved; else a new one, kept.
    package func deviceKey() throws(AgentError) -> P256.Signing.PrivateKey {
        if let data = try items.read(account: account) { return try Self.key(data) }
        if let legacyAccount, legacyAccount != account, let data = try items.read(account: legacyAccount) {
            let key = try Self.key(data)
            guard try items.add(account: account, data: data) else { return try stored() }
            items.delete(account: legacyAccount)
            return key
        }
        let made = P256.Signing.PrivateKey()
        guard try items.add(account: account, data: made.rawRepresentation) else { return try stored() }
        return made
    }

    /// The stable item's key, which another process has just made.
    private func stored() throws(AgentError) -> P256.Signing.PrivateKey {
        guard let data = try items.read(account: account) else { throw .storage("the device key vanished from the keychain as it was made") }
        return try Self.key(data)
    }

    private static func key(_ data: Data) throws(AgentError) -> P256.Signing.PrivateKey {
        guard let key = try? P256.Signing.PrivateKey(rawRepresentation: data) else { throw .storage("the device key in the keychain is not a P-256 key") }
        return key
    }
}

#if canImport(Security)
/// Generic-password items of one keychain service, readable only on this device after its first unlock.
package struct KeychainItems: SecretItems {
    /// The service.
    package let service: String

    /// The items of `service`.
    package init(service: String) {
        self.service = service
    }

    package func read(account: String) throws(AgentError) -> Data? {
        let query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account,
            kSecReturnData as String: true, kSecMatchLimit as String: kSecMatchLimitOne,
        ]
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw .storage("the keychain item cannot be read (status \(status))") }
        return data
    }

    package func add(account: String, data: Data) throws(AgentError) -> Bool {
        let attributes: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account,
            kSecAttrAccessible as String: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, kSecValueData as String: data,
        ]
        let status = SecItemAdd(attributes as CFDictionary, nil)
        if status == errSecDuplicateItem { return false }
        guard status == errSecSuccess else { throw .storage("the keychain refused the item (status \(status))") }
        return true
    }

    package func delete(account: String) {
        let match: [String: Any] = [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service,
                                    kSecAttrAccount as String: account]
        _ = SecItemDelete(match as CFDictionary)
    }
}
#endif
