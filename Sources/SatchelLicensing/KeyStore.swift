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
    /// The asset.
    public var assetID: String
    /// The FairPlay asset ID (the `skd://` host), or the asset ID.
    public var fairPlayAssetID: String
    /// The key ID, hex.
    public var keyID: String
    /// The asset's policy.
    public var policy: AssetPolicy
}

/// One issued license, as the audit log keeps it.
public struct IssuedLicense: Sendable, Equatable, Codable {
    /// The asset.
    public var assetID: String
    /// The (first) key's ID, hex.
    public var keyID: String
    /// The user (the token's `sub`).
    public var subject: String
    /// The license type (``AuditFilter/type``).
    public var type: String
    /// When it was issued.
    public var issuedAt: Date
    /// The custom data the request carried, nil when none.
    public var customData: String?

    /// The audit listing's name in its cursors (two columns: the time issued, the record).
    public static let listing = "audit"

    /// A record.
    public init(assetID: String, keyID: String, subject: String, type: String, issuedAt: Date, customData: String? = nil) {
        (self.assetID, self.keyID, self.subject, self.type, self.issuedAt, self.customData) = (assetID, keyID, subject, type, issuedAt, customData)
    }
}

/// Which audit rows to read: every field that is set must match (asset and subject exactly, the type exactly,
/// issued at or after `since` and before `until`).
public struct AuditFilter: Sendable, Equatable {
    /// The asset ID.
    public var assetID: String?
    /// The user (the token's `sub`).
    public var subject: String?
    /// The license type as recorded (`fairplay`, `fairplay-sync`, `clearkey-temporary`, `clearkey-persistent-license`,
    /// `aes-128`, `satchel`).
    public var type: String?
    /// The earliest issue time.
    public var since: Date?
    /// The end of the time range (excluded).
    public var until: Date?

    /// A filter; nil fields match everything.
    public init(assetID: String? = nil, subject: String? = nil, type: String? = nil, since: Date? = nil, until: Date? = nil) {
        self.assetID = assetID
        self.subject = subject
        self.type = type
        self.since = since
        self.until = until
    }

    /// Whether `license` passes the filter.
    public func matches(_ license: IssuedLicense) -> Bool {
        (assetID.map { $0 == license.assetID } ?? true) && (subject.map { $0 == license.subject } ?? true)
            && (type.map { $0 == license.type } ?? true) && (since.map { license.issuedAt >= $0 } ?? true)
            && (until.map { license.issuedAt < $0 } ?? true)
    }
}

/// Where keys, policies and the audit live. ``FluentKeyStore`` keeps them in SQLite or PostgreSQL, sealed
/// with the key-encryption key; ``InMemoryKeyStore`` keeps them in memory (tests, tools). Every method fails
/// with a ``LicensingError``: `unknownAsset` for what is not there, `storage` when the store fails.
public protocol KeyStore: Sendable {
    /// Stores (or replaces) an asset's policy and keys, each with its `signalling` (none for a key it does not name).
    /// A key ID another asset holds is refused (``LicensingError/keyHeld(keyID:asset:)``) unless `reassign`, which moves it.
    func importKeys(_ keys: [ContentKey], assetID: String, fairPlayAssetID: String?, policy: AssetPolicy, reassign: Bool,
                    signalling: [KeyID: KeySignalling]) async throws(LicensingError)
    /// The signalling each key of an asset (by asset ID) was imported with; keys imported without any are left out.
    func signalling(asset: String) async throws(LicensingError) -> [KeyID: KeySignalling]
    /// A page of every key with its asset and policy (no key material), in order of asset ID then key ID; with a
    /// prefix, only assets whose ID starts with it.
    func summaries(_ page: ListingRequest) async throws(LicensingError) -> ListingPage<KeySummary>
    /// Imports many assets at once (a catalogue): each asset's row and keys put in place, or replaced when the asset is
    /// there already, so an import run again after a failure ends with each key once. A key ID another asset holds is
    /// refused (``LicensingError/keyHeld(keyID:asset:)``) and nothing of the batch is kept. Answers the keys imported.
    func importCatalog(_ entries: [CatalogEntry]) async throws(LicensingError) -> Int
    /// Every key of an asset named by its asset ID or FairPlay asset ID, first imported first (`unknownAsset` when
    /// there is none): what a device license carries.
    func keys(asset: String) async throws(LicensingError) -> [StoredKey]
    /// Licenses issued per hour of `hours` (hour starts, oldest first) by recorded type (``AuditFilter/type``), read from
    /// the hourly roll-ups kept with the audit (the dashboard's charts).
    func issuedPerHour(types: [String], hours: [Date]) async throws(LicensingError) -> [String: [Int]]
    /// How many assets and keys the store holds, estimated without counting rows (the dashboard's figures).
    func estimatedCounts() async throws(LicensingError) -> (assets: Int, keys: Int)
    /// Deletes an asset (and its keys), or a single key by its key ID. False when nothing matched.
    func delete(_ id: String) async throws(LicensingError) -> Bool
    /// The key with this key ID.
    func key(id keyID: KeyID) async throws(LicensingError) -> StoredKey
    /// The (first) key of an asset, by asset ID or FairPlay asset ID.
    func key(asset: String) async throws(LicensingError) -> StoredKey
    /// Records an issued license with the request's custom data; a license is handed out only once this returns.
    func recordLicense(assetID: String, keyID: String, subject: String, type: String, customData: String?, at date: Date) async throws(LicensingError)
    /// Records a Sync SPC report.
    func recordSync(contentID: String, durationToExpiry: UInt32, subject: String, at date: Date) async throws(LicensingError)
    /// Issued licenses that pass `filter`, newest first, at most `limit`.
    func licenses(matching filter: AuditFilter, limit: Int) async throws(LicensingError) -> [IssuedLicense]
    /// A page of the issued licenses that pass `filter`, newest first (keyset: the time issued, then the record; the
    /// page's `next` is the following page's `after`, listing ``IssuedLicense/listing``).
    func licenses(matching filter: AuditFilter, page: ListingRequest) async throws(LicensingError) -> ListingPage<IssuedLicense>
    /// The sync reports last received, newest first, at most 1,000.
    func syncReports() async throws(LicensingError) -> [(contentID: String, durationToExpiry: Int64, subject: String)]
}

extension KeyStore {
    /// Records an issued license that carried no custom data.
    public func recordLicense(assetID: String, keyID: String, subject: String, type: String, at date: Date) async throws(LicensingError) {
        try await recordLicense(assetID: assetID, keyID: keyID, subject: subject, type: type, customData: nil, at: date)
    }

    /// The last 100 issued licenses, newest first.
    public func licenses() async throws(LicensingError) -> [IssuedLicense] {
        try await licenses(limit: 100)
    }

    /// The last `limit` issued licenses, newest first.
    public func licenses(limit: Int) async throws(LicensingError) -> [IssuedLicense] {
        try await licenses(matching: AuditFilter(), limit: limit)
    }
}

extension KeyStore {
    /// Every key summary, page after page (scripts and tests; a server answers one page at a time).
    public func allSummaries() async throws(LicensingError) -> [KeySummary] {
        var all: [KeySummary] = [], request = ListingRequest(limit: ListingRequest.maximumLimit)
        while true {
            let page = try await summaries(request)
            all += page.items
            guard let next = page.next else { return all }
            request.after = try? ListingCursor(decoding: next, listing: KeySummary.listing, columns: 2)
        }
    }
}

extension KeyStore {
    /// A catalogue imported an asset at a time (stores without a batched import).
    public func importCatalog(_ entries: [CatalogEntry]) async throws(LicensingError) -> Int {
        for entry in entries {
            try await importKeys(entry.keys, assetID: entry.assetID, fairPlayAssetID: entry.fairPlayAssetID, policy: entry.policy, reassign: false,
                                 signalling: [:])
        }
        return entries.reduce(0) { $0 + $1.keys.count }
    }
}

extension KeySummary {
    /// The listing's name in its cursors.
    public static let listing = "keys"
    /// The listing's sort key: asset ID, key ID.
    public var sortKey: [String] { [assetID, keyID] }
}

extension KeyStore {
    /// ``importKeys(_:assetID:fairPlayAssetID:policy:reassign:signalling:)`` refusing key IDs another asset holds, without signalling.
    public func importKeys(_ keys: [ContentKey], assetID: String, fairPlayAssetID: String?, policy: AssetPolicy) async throws(LicensingError) {
        try await importKeys(keys, assetID: assetID, fairPlayAssetID: fairPlayAssetID, policy: policy, reassign: false, signalling: [:])
    }
}
