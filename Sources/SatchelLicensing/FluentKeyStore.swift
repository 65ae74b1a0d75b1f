import FluentKit
import Foundation
import SQLKit
import SatchelStorage
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
    /// Where the next key is looked up (on SQLite one of the connections beside the audit writer's).
    private let reader: @Sendable () -> any Database
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
        self.reader = { database }
        self.kek = kek
        self.cache = KeyCache()
        self.audit = AuditLog(database: database)
    }

    /// A store over the licensing database, sharing its audit log (and with SQLite, the audit journal).
    public init(database: LicensingDatabase, kek: KeyEncryptionKey) {
        self.database = database.database
        self.reader = { database.reader }
        self.kek = kek
        self.cache = KeyCache()
        self.audit = database.audit
    }

    /// Stores (or replaces) an asset's policy and keys with each key's signalling; a key ID another asset holds moves
    /// only with `reassign`.
    public func importKeys(_ keys: [ContentKey], assetID: String, fairPlayAssetID: String?, policy: AssetPolicy,
                           reassign: Bool, signalling: [KeyID: KeySignalling]) async throws(LicensingError) {
        guard !assetID.isEmpty, assetID.utf8.count <= 200 else { throw .badRequest("an asset ID is 1 to 200 bytes") }
        guard !keys.isEmpty else { throw .badRequest("no keys to import") }
        guard keys.count <= CatalogEntry.maximumKeys else { throw .badRequest("an asset has at most \(CatalogEntry.maximumKeys) keys") }
        let policyText: String
        do { policyText = String(decoding: try Self.encoder.encode(policy), as: UTF8.self) } catch { throw .badRequest("policy cannot be encoded") }
        var sealing: [(String, [UInt8], String, KeySignalling?)] = []
        for key in keys {
            sealing.append((key.keyID.hex, try kek.seal(key.key, keyID: key.keyID.hex), Hex.encode(key.iv), try signalling[key.keyID]?.checked()))
        }
        let sealed = sealing
        cache.clear()
        do {
            try await database.transaction { db in
                for (keyID, _, _, _) in sealed {
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
                for (keyID, sealedKey, iv, signalling) in sealed {
                    let model = try await KeyModel.find(keyID, on: db) ?? KeyModel()
                    model.fill(id: keyID, assetID: assetID, sealedKey: Data(sealedKey), iv: iv, signalling: signalling)
                    try await model.save(on: db)
                }
            }
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("import failed: \(String(describing: error).prefix(200))")
        }
    }

    /// Imports a catalogue's assets in one transaction: the key IDs checked against the keys held by other assets,
    /// then the assets and keys written with multi-row upserts (an asset or key imported before is replaced, never
    /// doubled).
    public func importCatalog(_ entries: [CatalogEntry]) async throws(LicensingError) -> Int {
        guard !entries.isEmpty else { return 0 }
        let now = Date()
        var assets: [[any SQLExpression]] = [], keys: [[any SQLExpression]] = [], owners: [String: String] = [:]
        var encoded: (policy: AssetPolicy, text: String)?  // a catalogue's assets mostly share a policy: encoded once
        for entry in entries {
            let policy: String
            if let encoded, encoded.policy == entry.policy {
                policy = encoded.text
            } else {
                do { policy = String(decoding: try Self.encoder.encode(entry.policy), as: UTF8.self) } catch { throw .badRequest("policy cannot be encoded") }
                encoded = (entry.policy, policy)
            }
            assets.append([SQLBind(entry.assetID), SQLBind(entry.fairPlayAssetID ?? entry.assetID), SQLBind(policy), SQLBind(now)])
            for (index, key) in entry.keys.enumerated() {
                if let other = owners.updateValue(entry.assetID, forKey: key.keyID.hex), other != entry.assetID {
                    throw .keyHeld(keyID: key.keyID.hex, asset: other)
                }
                // Each key a microsecond after the one before: an asset's keys keep their order (its first key is the first given).
                keys.append([SQLBind(key.keyID.hex), SQLBind(entry.assetID), SQLBind(Data(try kek.seal(key.key, keyID: key.keyID.hex))),
                             SQLBind(Hex.encode(key.iv)), SQLBind(now.addingTimeInterval(Double(index) / 1_000_000))])
            }
        }
        let (assetRows, keyRows, owned) = (assets, keys, owners)
        cache.clear()
        do {
            try await database.transaction { database in
                guard let sql = database as? any SQLDatabase else { throw LicensingError.storage("the key store needs an SQL database") }
                for chunk in Array(owned.keys).chunked(Self.rowsPerStatement) {
                    for row in try await sql.raw("SELECT key_id, asset_id FROM satchel_keys WHERE key_id IN (\(binds: chunk.map { $0 as any Encodable & Sendable }))").all() {
                        let (keyID, holder) = (try row.decode(column: "key_id", as: String.self), try row.decode(column: "asset_id", as: String.self))
                        if owned[keyID] != holder { throw LicensingError.keyHeld(keyID: keyID, asset: holder) }
                    }
                }
                for chunk in assetRows.chunked(Self.rowsPerStatement) {
                    try await sql.raw("""
                        INSERT INTO satchel_assets (asset_id, fairplay_asset_id, policy, created_at) VALUES \(SQLList(chunk.map { SQLGroupExpression($0) }))
                        ON CONFLICT (asset_id) DO UPDATE SET fairplay_asset_id = excluded.fairplay_asset_id, policy = excluded.policy
                        """).run()
                }
                for chunk in keyRows.chunked(Self.rowsPerStatement) {
                    try await sql.raw("""
                        INSERT INTO satchel_keys (key_id, asset_id, sealed_key, iv, created_at) VALUES \(SQLList(chunk.map { SQLGroupExpression($0) }))
                        ON CONFLICT (key_id) DO UPDATE SET sealed_key = excluded.sealed_key, iv = excluded.iv
                        """).run()
                }
            }
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("catalogue import failed: \(String(describing: error).prefix(200))")
        }
        return keyRows.count
    }

    /// Rows one INSERT writes (SQLite takes at most 32,766 bound values a statement).
    static let rowsPerStatement = 500

    /// A page of every key with its asset and policy (no key material), by asset ID then key ID.
    public func summaries(_ page: ListingRequest) async throws(LicensingError) -> ListingPage<KeySummary> {
        let sql = try sqlDatabase()
        do {
            let rows = try await sql.raw(LicensingQueries.keyPage(after: page.afterKey, prefix: page.prefix, limit: page.limit + 1)).all()
            var summaries: [KeySummary] = []
            for row in rows {
                let assetID = try row.decode(column: "asset_id", as: String.self)
                if let prefix = page.prefix, !assetID.hasPrefix(prefix) { break }  // past the IDs that start with it
                summaries.append(KeySummary(assetID: assetID, fairPlayAssetID: try row.decode(column: "fairplay_asset_id", as: String.self),
                                            keyID: try row.decode(column: "key_id", as: String.self),
                                            policy: try Self.decoder.decode(AssetPolicy.self, from: Data(try row.decode(column: "policy", as: String.self).utf8))))
            }
            return ListingPage(reading: summaries, limit: page.limit, listing: KeySummary.listing, key: \.sortKey)
        } catch {
            throw .storage("cannot list keys: \(String(describing: error).prefix(200))")
        }
    }

    /// Licenses issued per hour by type, from the roll-ups (what is still in the journal folded first).
    public func issuedPerHour(types: [String], hours: [Date]) async throws(LicensingError) -> [String: [Int]] {
        guard let sql = audit.database as? any SQLDatabase else { throw .storage("the audit's database does not speak SQL") }
        do {
            try await audit.flush()
            let counts = try await Rollups.counts(types.map { "license:" + $0 }, hours: hours, on: sql)
            return Dictionary(uniqueKeysWithValues: types.map { ($0, counts["license:" + $0] ?? Array(repeating: 0, count: hours.count)) })
        } catch {
            throw .storage("cannot read the hourly counts: \(String(describing: error).prefix(200))")
        }
    }

    /// How many assets and keys the store holds, estimated (never a count of a large table).
    public func estimatedCounts() async throws(LicensingError) -> (assets: Int, keys: Int) {
        let sql = try sqlDatabase()
        do {
            return (try await TableSize.estimate(AssetModel.schema, on: sql), try await TableSize.estimate(KeyModel.schema, on: sql))
        } catch {
            throw .storage("cannot count the keys: \(String(describing: error).prefix(200))")
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

    /// Empties the cache of opened keys: the next lookup of each goes to the database (the scale benchmark's rounds).
    package func forgetCachedKeys() {
        cache.clear()
    }

    /// The key with this key ID.
    public func key(id keyID: KeyID) async throws(LicensingError) -> StoredKey {
        if let cached = cache.get("kid:" + keyID.hex)?.first { return cached }
        guard let stored = try await load(LicensingQueries.key(id: keyID.hex)).first else { throw .unknownAsset(keyID.hex) }
        cache.put([stored], for: ["kid:" + keyID.hex])
        return stored
    }

    /// The (first) key of an asset, by asset ID or FairPlay asset ID.
    public func key(asset: String) async throws(LicensingError) -> StoredKey {
        guard let first = try await keys(asset: asset).first else { throw .unknownAsset(asset) }
        return first
    }

    /// Every key of an asset, by asset ID or FairPlay asset ID, through the keys' index by asset.
    public func keys(asset: String) async throws(LicensingError) -> [StoredKey] {
        if let cached = cache.get("asset:" + asset) { return cached }
        var keys = try await load(LicensingQueries.keys(assetID: asset))
        if keys.isEmpty { keys = try await load(LicensingQueries.keys(fairPlayAssetID: asset)) }
        guard !keys.isEmpty else { throw .unknownAsset(asset) }
        cache.put(keys, for: ["asset:" + asset])
        return keys
    }

    /// Each key's signalling of an asset (by asset ID), through the keys' index by asset; keys imported without any are left out.
    public func signalling(asset: String) async throws(LicensingError) -> [KeyID: KeySignalling] {
        try await KeySignalling.rows(of: asset, on: sqlDatabase())
    }

    /// The keys a query of ``LicensingQueries`` reads, opened.
    private func load(_ query: SQLQueryString) async throws(LicensingError) -> [StoredKey] {
        guard let sql = reader() as? any SQLDatabase else { throw .storage("the key store needs an SQL database") }
        let rows: [any SQLRow]
        do { rows = try await sql.raw(query).all() } catch { throw .storage("lookup failed") }
        var keys: [StoredKey] = []
        for row in rows {
            let fields: (keyID: String, assetID: String, sealed: Data, iv: String, fairPlay: String, policy: String)
            do {
                fields = (try row.decode(column: "key_id", as: String.self), try row.decode(column: "asset_id", as: String.self),
                          try row.decode(column: "sealed_key", as: Data.self), try row.decode(column: "iv", as: String.self),
                          try row.decode(column: "fairplay_asset_id", as: String.self), try row.decode(column: "policy", as: String.self))
            } catch {
                throw .storage("a stored record is damaged")
            }
            let key = try kek.open(Array(fields.sealed), keyID: fields.keyID)
            do {
                let policy = try Self.decoder.decode(AssetPolicy.self, from: Data(fields.policy.utf8))
                let content = try ContentKey(keyID: KeyID(hex: fields.keyID), key: key, iv: Hex.decode(fields.iv, count: 16))
                keys.append(StoredKey(assetID: fields.assetID, fairPlayAssetID: fields.fairPlay, key: content, policy: policy))
            } catch {
                throw .storage("a stored record is damaged")
            }
        }
        return keys
    }

    /// The database as SQL (SQLite and PostgreSQL both are).
    private func sqlDatabase() throws(LicensingError) -> any SQLDatabase {
        guard let sql = database as? any SQLDatabase else { throw .storage("the key store needs an SQL database") }
        return sql
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
        try await AuditListing.newest(filter, limit: limit, of: audit)
    }

    /// A page of the audit that passes `filter`, newest first: keyset on the time issued and the record, through the
    /// time index.
    public func licenses(matching filter: AuditFilter, page: ListingRequest) async throws(LicensingError) -> ListingPage<IssuedLicense> {
        do { try await audit.flush() } catch { throw .storage("cannot read the audit log") }
        return try await AuditListing.page(filter, page, on: audit.database)
    }

    /// Sync reports received.
    public func syncReports() async throws(LicensingError) -> [(contentID: String, durationToExpiry: Int64, subject: String)] {
        try await AuditListing.syncReports(of: audit)
    }
}

extension Array {
    /// The array in consecutive slices of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}

/// Opened keys by lookup key (a key ID, or an asset's keys), each with the time it was loaded.
final class KeyCache: Sendable {
    private let entries = Locked<[String: (key: [StoredKey], loaded: ContinuousClock.Instant)]>([:])

    func get(_ lookup: String) -> [StoredKey]? {
        entries.withLock { entries in
            guard let entry = entries[lookup] else { return nil }
            guard entry.loaded.duration(to: .now) < FluentKeyStore.cacheLifetime else {
                entries[lookup] = nil
                return nil
            }
            return entry.key
        }
    }

    func put(_ key: [StoredKey], for lookups: [String]) {
        entries.withLock { entries in
            if entries.count > 10_000 { entries.removeAll() }
            for lookup in lookups { entries[lookup] = (key, .now) }
        }
    }

    func clear() {
        entries.withLock { $0.removeAll() }
    }
}
