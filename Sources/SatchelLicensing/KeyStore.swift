import Foundation
import SatchelBytes
import SatchelProtection

/// A key as the store returns it: opened with the KEK, with its asset and policy.
public struct StoredKey: Sendable {
    /// The asset ID.
    public var assetID: String
    /// The asset ID inside FairPlay SPCs.
    public var fairPlayAssetID: String
    /// The content key.
    public var key: ContentKey
    /// The asset's policy.
    public var policy: AssetPolicy
}

/// One row of `satchel keys list` (no key material).
public struct KeySummary: Sendable, Codable {
    public var assetID: String
    public var fairPlayAssetID: String
    public var keyID: String
    public var policy: AssetPolicy
}

/// One issued license, as the audit log keeps it.
public typealias IssuedLicense = (assetID: String, keyID: String, subject: String, type: String, issuedAt: Date)

/// Where keys, policies and the audit live. ``FluentKeyStore`` keeps them in SQLite or PostgreSQL, sealed
/// with the key-encryption key; ``InMemoryKeyStore`` keeps them in memory (tests, tools). Every method fails
/// with a ``LicensingError``: `unknownAsset` for what is not there, `storage` when the store fails.
public protocol KeyStore: Sendable {
    /// Stores (or replaces) an asset's policy and keys.
    func importKeys(_ keys: [ContentKey], assetID: String, fairPlayAssetID: String?, policy: AssetPolicy) async throws(LicensingError)
    /// Every key with its asset and policy (no key material), by asset.
    func list() async throws(LicensingError) -> [KeySummary]
    /// Deletes an asset (and its keys), or a single key by its key ID. False when nothing matched.
    func delete(_ id: String) async throws(LicensingError) -> Bool
    /// The key with this key ID.
    func key(id keyID: KeyID) async throws(LicensingError) -> StoredKey
    /// The (first) key of an asset, by asset ID or FairPlay asset ID.
    func key(asset: String) async throws(LicensingError) -> StoredKey
    /// Records an issued license; a license is handed out only once this returns.
    func recordLicense(assetID: String, keyID: String, subject: String, type: String, at date: Date) async throws(LicensingError)
    /// Records a Sync SPC report.
    func recordSync(contentID: String, durationToExpiry: UInt32, subject: String, at date: Date) async throws(LicensingError)
    /// Issued licenses, newest first.
    func licenses(limit: Int) async throws(LicensingError) -> [IssuedLicense]
    /// Sync reports received.
    func syncReports() async throws(LicensingError) -> [(contentID: String, durationToExpiry: Int64, subject: String)]
}

extension KeyStore {
    /// The last 100 issued licenses, newest first.
    public func licenses() async throws(LicensingError) -> [IssuedLicense] {
        try await licenses(limit: 100)
    }
}
