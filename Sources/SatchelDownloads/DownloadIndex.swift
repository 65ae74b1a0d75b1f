import FluentKit
import FluentSQLiteDriver
import Foundation
import SatchelStreams
import SatchelBytes
import SatchelSystem
import Logging
import SatchelStorage

/// The persistent index: one row per asset (its metadata, state and progress) and the engine's settings, in a
/// SQLite file. The source of truth for what is queued; which bytes exist is the store's to say. The plan (which
/// may list 200,000 files) lives in the asset's folder, written once when the asset is added, so a state change
/// writes a small row. Plans of rows written by earlier versions (inline, or in the plan table) are still read.
package final class DownloadIndex: DownloadIndexing {
    private let store: FluentStore
    private let database: any Database
    private let encoder = JSONCoding.encoder(dates: .referenceSeconds)
    private let decoder = JSONCoding.decoder(dates: .referenceSeconds)
    private let plans = PlanCache()
    private let closed = Locked(false)
    /// Seals the records' secrets (header values, entitlement tokens); nil: they are stored as given.
    private let secrets: (any SecretSealing)?
    /// The most records ``all()`` reads: the queue's own limit can be no higher (``recordLimit``).
    let readLimit: Int
    /// The highest a queue's limit may be set: a pass over the queue reads at most this many records.
    static let recordLimit = 100_000

    /// Opens (creating and migrating) the index at `path` (mode 0600), sealing the secrets of its records with
    /// `secrets` (the device's key: a copy of the file gives no token away).
    /// `readLimit`: the most records a read of the queue takes (smaller in tests).
    package init(path: String, secrets: (any SecretSealing)? = nil, logger: Logger = Logger(label: "satchel.downloads"),
                 readLimit: Int = DownloadIndex.recordLimit) async throws(DownloadError) {
        self.secrets = secrets
        self.readLimit = readLimit
        do {
            try PrivateFiles.folder(PrivateFiles.parent(of: path))
            try PrivateFiles.file(path)  // SQLite gives its journal and WAL files the database file's mode
        } catch {
            throw .storage("cannot create \(path) (owner only): \(error.description)")
        }
        do {
            // Synced at checkpoints: a power loss may take the last state changes back, which the engine redoes (the
            // files are the truth: a segment on disk is found again, a missing one fetched again).
            store = try await FluentStore.open(.sqlite(.file(path)), as: .sqlite, migrations: [CreateDownloadSchema(), CreatePlanSchema()],
                                               sqlite: SQLiteSettings(durability: .processCrash), logger: logger)
            database = store.database
        } catch {
            throw .storage("cannot open or migrate \(path): \(error)")
        }
    }

    /// Closes the database.
    package func close() async {
        guard closed.withLock({ closed in defer { closed = true }; return !closed }) else { return }
        await store.shutdown()
    }

    /// An index dropped without ``close()`` closes its database here, waiting for it (never on an event loop:
    /// the index is released by the engine's actor or its caller).
    deinit {
        if !closed.current { store.shutdownBlocking() }
    }

    /// Every asset, in queue order: at most ``readLimit`` (a queue made longer than its limit allows, by hand or by
    /// an earlier version, is read to there).
    package func all() async throws(DownloadError) -> [DownloadAsset] {
        var assets: [DownloadAsset] = []
        let limit = readLimit
        for row in try await run({ try await AssetRow.query(on: self.database).sort(\.$position).limit(limit).all() }) {
            if let asset = try await decode(row) { assets.append(asset) }
        }
        return assets
    }

    /// The walk of a repair or an upgrade over every record: in pages of ``walkPage`` rows by ID (each page read
    /// through the primary key from where the last ended), so no read holds the whole table; answers what `page`
    /// made of each.
    private func walk<T>(_ page: ([AssetRow]) async throws -> [T]) async throws(DownloadError) -> [T] {
        var after: String?
        var made: [T] = []
        while true {
            let rows = try await run { () async throws -> [AssetRow] in
                let query = AssetRow.query(on: self.database)
                if let after { query.filter(\.$id > after) }
                return try await query.sort(\.$id).limit(Self.walkPage).all()
            }
            made += try await run { try await page(rows) }
            guard rows.count == Self.walkPage, let last = rows.last?.id else { return made }
            after = last
        }
    }

    /// Rows a repair or upgrade walk reads at a time.
    static let walkPage = 500

    /// One asset.
    package func find(_ id: String) async throws(DownloadError) -> DownloadAsset? {
        guard let row = try await run({ try await AssetRow.find(id, on: self.database) }) else { return nil }
        return try await decode(row)
    }

    /// Whether the asset is paused, read from its row alone (no plan is decoded); nil when there is no such asset.
    package func isPaused(_ id: String) async throws(DownloadError) -> Bool? {
        try await run { try await AssetRow.query(on: self.database).filter(\.$id == id).field(\.$id).field(\.$paused).first()?.paused }
    }

    /// Inserts or updates an asset. Its plan is written the first time only.
    package func save(_ asset: DownloadAsset) async throws(DownloadError) {
        _ = try await write(asset, createIfMissing: true)
    }

    /// Updates an asset that is still in the index; false (nothing written) when its row is gone, so that a
    /// state change racing with a removal never brings the asset back.
    @discardableResult
    package func update(_ asset: DownloadAsset) async throws(DownloadError) -> Bool {
        try await write(asset, createIfMissing: false)
    }

    private func write(_ asset: DownloadAsset, createIfMissing: Bool) async throws(DownloadError) -> Bool {
        let record: Data
        var light = asset
        light.plan = asset.plan.placeholder
        do {
            light.options = try light.options.sealingSecrets(with: secrets)
            record = try encoder.encode(light)
        } catch {
            throw .storage("cannot encode \(asset.id)")
        }
        let written = try await run {
            try await self.database.transaction { database -> Bool in
                let existing = try await AssetRow.find(asset.id, on: database)
                guard existing != nil || createIfMissing else { return false }
                let row = existing ?? AssetRow(id: asset.id)
                row.position = asset.position
                row.state = asset.state.rawValue
                row.paused = asset.isPaused
                row.record = record
                try await row.save(on: database)
                return true
            }
        }
        return written
    }

    /// Deletes an asset's row and plan.
    package func delete(_ id: String) async throws(DownloadError) {
        try await run {
            try await self.database.transaction { database in
                try await AssetRow.query(on: database).filter(\.$id == id).delete()
                try await PlanRow.query(on: database).filter(\.$id == id).delete()
            }
        }
    }

    /// How many records the index holds (damaged ones too): counted, none read.
    package func count() async throws(DownloadError) -> Int {
        try await run { try await AssetRow.query(on: self.database).count() }
    }

    /// The next free queue position.
    package func nextPosition() async throws(DownloadError) -> Int {
        try await run { try await AssetRow.query(on: self.database).max(\.$position) }.map { $0 + 1 } ?? 0
    }

    /// A stored setting.
    package func setting(_ key: String) async throws(DownloadError) -> String? {
        try await run { try await SettingRow.find(key, on: self.database)?.value }
    }

    /// Stores a setting.
    package func setSetting(_ key: String, _ value: String) async throws(DownloadError) {
        try await run {
            let row = try await SettingRow.find(key, on: self.database) ?? SettingRow(key: key)
            row.value = value
            try await row.save(on: self.database)
        }
    }

    /// Rows whose record cannot be decoded, with the reason (field names only, never values).
    package func damaged() async throws(DownloadError) -> [DamagedRecord] {
        try await walk { rows in
            rows.compactMap { row -> DamagedRecord? in
                do {
                    let asset = try decoder.decode(DownloadAsset.self, from: row.record)
                    guard (try? asset.options.openingSecrets(with: secrets)) != nil else {
                        return DamagedRecord(id: row.id ?? "", reason: "its sealed token or headers do not open with this device's key")
                    }
                    return nil
                } catch {
                    return DamagedRecord(id: row.id ?? "", reason: Self.reason(error))
                }
            }
        }
    }

    /// Assets whose plan an earlier version kept here: inline in the record, or in the plan table.
    package func legacyPlanIDs() async throws(DownloadError) -> [String] {
        try await walk { rows in
            let tabled = Set(try await PlanRow.query(on: database).filter(\.$id ~~ rows.compactMap(\.id)).all().compactMap(\.id))
            return rows.compactMap { row -> String? in
                guard let id = row.id, let asset = try? decoder.decode(DownloadAsset.self, from: row.record) else { return nil }
                return !asset.plan.isPlaceholder || tabled.contains(id) ? id : nil
            }
        }
    }

    /// Rewrites the asset's record without its plan and deletes its plan-table row, in one transaction.
    package func releaseLegacyPlan(_ id: String) async throws(DownloadError) {
        let decoder = self.decoder, encoder = self.encoder
        try await run {
            try await self.database.transaction { database in
                if let row = try await AssetRow.find(id, on: database), var asset = try? decoder.decode(DownloadAsset.self, from: row.record),
                   !asset.plan.isPlaceholder {
                    asset.plan = asset.plan.placeholder
                    row.record = try encoder.encode(asset)
                    try await row.save(on: database)
                }
                try await PlanRow.query(on: database).filter(\.$id == id).delete()
            }
        }
        plans.remove(id)
    }

    /// Seals the secrets an earlier version stored unsealed (when this index has a sealer); answers how many
    /// records were rewritten.
    package func sealLegacySecrets() async throws(DownloadError) -> Int {
        guard secrets != nil else { return 0 }
        let unsealed = try await walk { rows in
            rows.compactMap { row -> String? in
                guard let id = row.id, let raw = try? decoder.decode(DownloadAsset.self, from: row.record), raw.options.hasUnsealedSecrets else { return nil }
                return id
            }
        }
        var sealed = 0
        for id in unsealed {
            guard let asset = try await find(id) else { continue }
            if try await update(asset) { sealed += 1 }
        }
        return sealed
    }

    /// Why a record does not decode, naming fields but no values.
    static func reason(_ error: any Error) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let names = context.codingPath.map(\.stringValue).joined(separator: ".")
            return names.isEmpty ? "the record" : names
        }
        switch error as? DecodingError {
        case let .keyNotFound(key, context)?: return "\(path(context)): missing field \(key.stringValue)"
        case let .typeMismatch(_, context)?, let .valueNotFound(_, context)?: return "\(path(context)) has the wrong type"
        case let .dataCorrupted(context)?: return context.codingPath.isEmpty ? "the record is not JSON" : "\(path(context)) is invalid"
        default: return "the record cannot be decoded"
        }
    }

    /// The asset of a row. Its plan lives in the asset's folder (the engine reads it from the store); rows
    /// written by earlier versions carry it inline or in the plan table, and keep it. nil when the row cannot be decoded.
    private func decode(_ row: AssetRow) async throws(DownloadError) -> DownloadAsset? {
        guard var asset = try? decoder.decode(DownloadAsset.self, from: row.record),
              let opened = try? asset.options.openingSecrets(with: secrets) else { return nil }
        asset.options = opened
        guard asset.plan.isPlaceholder else { return asset }
        if let plan = plans.get(asset.id) {
            asset.plan = plan
            return asset
        }
        let id = asset.id
        if let data = try await run({ try await PlanRow.find(id, on: self.database)?.plan }), let plan = try? decoder.decode(DownloadPlan.self, from: data) {
            plans.put(id, plan)
            asset.plan = plan
        }
        return asset
    }

    private func run<T>(_ body: () async throws -> T) async throws(DownloadError) -> T {
        do { return try await body() } catch { throw .storage("index: \(String(describing: error).prefix(200))") }
    }
}

/// An asset's row: queryable columns plus the whole record as JSON.
final class AssetRow: Model, @unchecked Sendable {
    static let schema = "download_assets"

    @ID(custom: "id", generatedBy: .user) var id: String?
    @Field(key: "position") var position: Int
    @Field(key: "state") var state: String
    @Field(key: "paused") var paused: Bool
    @Field(key: "record") var record: Data

    init() {}

    init(id: String) {
        self.id = id
    }
}

/// The plan table of earlier versions: read for their rows, never written (plans now live in the asset's folder).
final class PlanRow: Model, @unchecked Sendable {
    static let schema = "download_plans"

    @ID(custom: "id", generatedBy: .user) var id: String?
    @Field(key: "plan") var plan: Data

    init() {}

    init(id: String) {
        self.id = id
    }
}

/// Plans read or written in this process (they never change, so the cache is always right). At most
/// ``capacity`` are kept (a plan may list 200,000 files): past that, an arbitrary one is dropped and read again
/// from where it is kept (the asset's folder, or the plan table of earlier versions) when needed.
final class PlanCache: Sendable {
    static let capacity = 32
    private let plans = Locked<[String: DownloadPlan]>([:])

    func get(_ id: String) -> DownloadPlan? { plans.withLock { $0[id] } }
    func put(_ id: String, _ plan: DownloadPlan) {
        plans.withLock { plans in
            if plans[id] == nil, plans.count >= Self.capacity, let any = plans.keys.first { plans[any] = nil }
            plans[id] = plan
        }
    }
    func remove(_ id: String) { _ = plans.withLock { $0.removeValue(forKey: id) } }
}

/// A key/value setting (`enabled`).
final class SettingRow: Model, @unchecked Sendable {
    static let schema = "download_settings"

    @ID(custom: "key", generatedBy: .user) var id: String?
    @Field(key: "value") var value: String

    init() {}

    init(key: String) {
        id = key
    }
}

struct CreateDownloadSchema: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(AssetRow.schema)
            .field("id", .string, .identifier(auto: false))
            .field("position", .int, .required)
            .field("state", .string, .required)
            .field("paused", .bool, .required)
            .field("record", .data, .required)
            .create()
        try await database.schema(SettingRow.schema)
            .field("key", .string, .identifier(auto: false))
            .field("value", .string, .required)
            .create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(SettingRow.schema).delete()
        try await database.schema(AssetRow.schema).delete()
    }
}

/// Plans in a table of their own (rows written before keep theirs inline and still decode).
struct CreatePlanSchema: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(PlanRow.schema)
            .field("id", .string, .identifier(auto: false))
            .field("plan", .data, .required)
            .create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(PlanRow.schema).delete()
    }
}
