import FluentKit
import Foundation
import SatchelSystem
import SatchelBytes
import SatchelProtection

/// Keys and policies, stored with FluentKit (SQLite or PostgreSQL) and sealed with the KEK.
///
/// Opened keys are cached in memory for ``cacheLifetime`` so that licenses are issued without a
/// database round trip; this store's own imports and deletes clear the cache at once, changes made
/// by another process are seen within the lifetime.
public struct FluentKeyStore: KeyStore {
    private let database: any Database
    private let kek: KeyEncryptionKey
    private let cache: KeyCache
    /// The audit log (licenses and sync reports), written in batches.
    public let audit: AuditLog
    /// How long an opened key is served from memory.
    public static let cacheLifetime: Duration = .seconds(10)
    private static let encoder = JSONCoding.encoder()
    private static let decoder = JSONCoding.decoder()

    /// A store over `database`, with an audit log of its own that commits each batch before its answers.
    public init(database: any Database, kek: KeyEncryptionKey) {
        self.database = database
        self.kek = kek
        self.cache = KeyCache()
        self.audit = AuditLog(database: database)
    }

    /// A store over the licensing database, sharing its audit log (and with SQLite, the audit journal).
    public init(database: LicensingDatabase, kek: KeyEncryptionKey) {
        self.database = database.database
        self.kek = kek
        self.cache = KeyCache()
        self.audit = database.audit
    }

    /// Stores (or replaces) an asset's policy and keys; a key ID another asset holds moves only with `reassign`.
    public func importKeys(_ keys: [ContentKey], assetID: String, fairPlayAssetID: String?, policy: AssetPolicy,
                           reassign: Bool) async throws(LicensingError) {
        guard !assetID.isEmpty, assetID.utf8.count <= 200 else { throw .badRequest("an asset ID is 1 to 200 bytes") }
        guard !keys.isEmpty else { throw .badRequest("no keys to import") }
        let policyText: String
        do { policyText = String(decoding: try Self.encoder.encode(policy), as: UTF8.self) } catch { throw .badRequest("policy cannot be encoded") }
        var sealing: [(String, [UInt8], String)] = []
        for key in keys { sealing.append((key.keyID.hex, try kek.seal(key.key, keyID: key.keyID.hex), Hex.encode(key.iv))) }
        let sealed = sealing
        cache.clear()
        do {
            try await database.transaction { db in
                for (keyID, _, _) in sealed {
                    if let held = try await KeyModel.find(keyID, on: db), held.assetID != assetID, !reassign {
                        throw LicensingError.keyHeld(keyID: keyID, asset: held.assetID)
                    }
                }
                if let existing = try await AssetModel.find(assetID, on: db) {
                    existing.fairPlayAssetID = fairPlayAssetID ?? assetID
                    existing.policy = policyText
                    try await existing.save(on: db)
                } else {
                    try await AssetModel(id: assetID, fairPlayAssetID: fairPlayAssetID ?? assetID, policy: policyText).create(on: db)
                }
                for (keyID, sealedKey, iv) in sealed {
                    if let existing = try await KeyModel.find(keyID, on: db) {
                        existing.assetID = assetID
                        existing.sealedKey = Data(sealedKey)
                        existing.iv = iv
                        try await existing.save(on: db)
                    } else {
                        try await KeyModel(id: keyID, assetID: assetID, sealedKey: Data(sealedKey), iv: iv).create(on: db)
                    }
                }
            }
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("import failed: \(String(describing: error).prefix(200))")
        }
    }

    /// Every key with its asset and policy (no key material).
    public func list() async throws(LicensingError) -> [KeySummary] {
        do {
            let assets = try await AssetModel.query(on: database).all()
            let keys = try await KeyModel.query(on: database).sort(\.$assetID).all()
            return try keys.compactMap { key -> KeySummary? in
                guard let asset = assets.first(where: { $0.id == key.assetID }), let keyID = key.id else { return nil }
                return KeySummary(assetID: key.assetID, fairPlayAssetID: asset.fairPlayAssetID, keyID: keyID,
                                  policy: try Self.decoder.decode(AssetPolicy.self, from: Data(asset.policy.utf8)))
            }
        } catch {
            throw .storage("cannot list keys: \(String(describing: error).prefix(200))")
        }
    }

    /// Deletes an asset (and its keys), or a single key by its key ID. Returns false when nothing matched.
    public func delete(_ id: String) async throws(LicensingError) -> Bool {
        cache.clear()
        do {
            return try await database.transaction { db in
                if let asset = try await AssetModel.find(id, on: db) {
                    try await KeyModel.query(on: db).filter(\.$assetID == id).delete()
                    try await asset.delete(on: db)
                    return true
                }
                if let key = try await KeyModel.find(id.lowercased(), on: db) {
                    try await key.delete(on: db)
                    return true
                }
                return false
            }
        } catch {
            throw .storage("cannot delete \(id): \(String(describing: error).prefix(200))")
        }
    }

    /// The key with this key ID.
    public func key(id keyID: KeyID) async throws(LicensingError) -> StoredKey {
        if let cached = cache.get("kid:" + keyID.hex) { return cached }
        let stored = try await loadKey(id: keyID)
        cache.put(stored, for: ["kid:" + keyID.hex])
        return stored
    }

    /// The (first) key of an asset, by asset ID or FairPlay asset ID.
    public func key(asset: String) async throws(LicensingError) -> StoredKey {
        if let cached = cache.get("asset:" + asset) { return cached }
        let stored = try await loadKey(asset: asset)
        cache.put(stored, for: ["asset:" + asset, "kid:" + stored.key.keyID.hex])
        return stored
    }

    private func loadKey(id keyID: KeyID) async throws(LicensingError) -> StoredKey {
        let model: KeyModel?
        do { model = try await KeyModel.find(keyID.hex, on: database) } catch { throw .storage("lookup failed") }
        guard let model else { throw .unknownAsset(keyID.hex) }
        return try await open(model)
    }

    private func loadKey(asset: String) async throws(LicensingError) -> StoredKey {
        let model: KeyModel?
        do {
            var assetID = asset
            if try await AssetModel.find(asset, on: database) == nil,
               let byFairPlay = try await AssetModel.query(on: database).filter(\.$fairPlayAssetID == asset).first(), let id = byFairPlay.id {
                assetID = id
            }
            model = try await KeyModel.query(on: database).filter(\.$assetID == assetID).sort(\.$createdAt).first()
        } catch {
            throw .storage("lookup failed")
        }
        guard let model else { throw .unknownAsset(asset) }
        return try await open(model)
    }

    private func open(_ model: KeyModel) async throws(LicensingError) -> StoredKey {
        let asset: AssetModel?
        do { asset = try await AssetModel.find(model.assetID, on: database) } catch { throw .storage("lookup failed") }
        guard let asset, let keyID = model.id else { throw .unknownAsset(model.assetID) }
        let key = try kek.open(Array(model.sealedKey), keyID: keyID)
        do {
            let policy = try Self.decoder.decode(AssetPolicy.self, from: Data(asset.policy.utf8))
            let content = try ContentKey(keyID: KeyID(hex: keyID), key: key, iv: Hex.decode(model.iv, count: 16))
            return StoredKey(assetID: model.assetID, fairPlayAssetID: asset.fairPlayAssetID, key: content, policy: policy)
        } catch {
            throw .storage("a stored record is damaged")
        }
    }

    /// Records an issued license.
    public func recordLicense(assetID: String, keyID: String, subject: String, type: String, customData: String?, at date: Date) async throws(LicensingError) {
        do { try await audit.record(AuditLog.LicenseEntry(assetID: assetID, keyID: keyID, subject: subject, type: type, customData: customData, issuedAt: date)) } catch {
            throw .storage("the audit record could not be written; no license was issued")
        }
    }

    /// Records a Sync SPC report.
    public func recordSync(contentID: String, durationToExpiry: UInt32, subject: String, at date: Date) async throws(LicensingError) {
        do { try await audit.record(AuditLog.SyncEntry(contentID: contentID, durationToExpiry: Int64(durationToExpiry), subject: subject, receivedAt: date)) } catch {
            throw .storage("the sync record could not be written")
        }
    }

    /// Issued licenses that pass `filter`, newest first (audit).
    public func licenses(matching filter: AuditFilter, limit: Int) async throws(LicensingError) -> [IssuedLicense] {
        do {
            try await audit.flush()
            let query = LicenseModel.query(on: database)
            if let asset = filter.assetID { query.filter(\.$assetID == asset) }
            if let subject = filter.subject { query.filter(\.$subject == subject) }
            if let type = filter.type { query.filter(\.$type == type) }
            if let since = filter.since { query.filter(\.$issuedAt >= since) }
            if let until = filter.until { query.filter(\.$issuedAt < until) }
            return try await query.sort(\.$issuedAt, .descending).limit(max(limit, 0)).all()
                .map { IssuedLicense(assetID: $0.assetID, keyID: $0.keyID, subject: $0.subject, type: $0.type, issuedAt: $0.issuedAt, customData: $0.customData) }
        } catch {
            throw .storage("cannot read the audit log")
        }
    }

    /// Sync reports received.
    public func syncReports() async throws(LicensingError) -> [(contentID: String, durationToExpiry: Int64, subject: String)] {
        do {
            try await audit.flush()
            return try await SyncModel.query(on: database).all().map { ($0.contentID, $0.durationToExpiry, $0.subject) }
        } catch {
            throw .storage("cannot read sync reports")
        }
    }
}

/// Opened keys by lookup key, each with the time it was loaded.
final class KeyCache: Sendable {
    private let entries = Locked<[String: (key: StoredKey, loaded: ContinuousClock.Instant)]>([:])

    func get(_ lookup: String) -> StoredKey? {
        entries.withLock { entries in
            guard let entry = entries[lookup] else { return nil }
            guard entry.loaded.duration(to: .now) < FluentKeyStore.cacheLifetime else {
                entries[lookup] = nil
                return nil
            }
            return entry.key
        }
    }

    func put(_ key: StoredKey, for lookups: [String]) {
        entries.withLock { entries in
            if entries.count > 10_000 { entries.removeAll() }
            for lookup in lookups { entries[lookup] = (key, .now) }
        }
    }

    func clear() {
        entries.withLock { $0.removeAll() }
    }
}
