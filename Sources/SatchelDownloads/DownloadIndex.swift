import FluentKit
import FluentSQLiteDriver
import Foundation
import Logging
import SatchelStorage

/// The persistent index: one row per asset (its metadata, plan and state) and the engine's settings,
/// in a SQLite file. The source of truth for what is queued; which bytes exist is the store's to say.
public final class DownloadIndex: Sendable {
    private let databases: Databases
    private let database: any Database
    private let encoder = JSONEncoder()
    private let decoder = JSONDecoder()

    /// Opens (creating and migrating) the index at `path`.
    public init(path: String, logger: Logger = Logger(label: "satchel.downloads")) async throws(DownloadError) {
        do {
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        } catch {
            throw .storage("cannot create the directory for \(path)")
        }
        do {
            let store = try await FluentStore.open(.sqlite(.file(path)), as: .sqlite, migrations: [CreateDownloadSchema()], logger: logger)
            databases = store.databases
            database = store.database
        } catch {
            throw .storage("cannot open or migrate \(path): \(error)")
        }
    }

    /// Closes the database.
    public func close() async {
        await databases.shutdownAsync()
    }

    /// Every asset, in queue order.
    public func all() async throws(DownloadError) -> [DownloadAsset] {
        try await run { try await AssetRow.query(on: self.database).sort(\.$position).all() }.compactMap(decode)
    }

    /// One asset.
    public func find(_ id: String) async throws(DownloadError) -> DownloadAsset? {
        try await run { try await AssetRow.find(id, on: self.database) }.flatMap(decode)
    }

    /// Inserts or updates an asset.
    public func save(_ asset: DownloadAsset) async throws(DownloadError) {
        let record: Data
        do { record = try encoder.encode(asset) } catch { throw .storage("cannot encode \(asset.id)") }
        try await run {
            let row = try await AssetRow.find(asset.id, on: self.database) ?? AssetRow(id: asset.id)
            row.position = asset.position
            row.state = asset.state.rawValue
            row.paused = asset.isPaused
            row.record = record
            try await row.save(on: self.database)
        }
    }

    /// Deletes an asset's row.
    public func delete(_ id: String) async throws(DownloadError) {
        try await run { try await AssetRow.query(on: self.database).filter(\.$id == id).delete() }
    }

    /// The next free queue position.
    public func nextPosition() async throws(DownloadError) -> Int {
        try await run { try await AssetRow.query(on: self.database).max(\.$position) }.map { $0 + 1 } ?? 0
    }

    /// A stored setting.
    public func setting(_ key: String) async throws(DownloadError) -> String? {
        try await run { try await SettingRow.find(key, on: self.database)?.value }
    }

    /// Stores a setting.
    public func setSetting(_ key: String, _ value: String) async throws(DownloadError) {
        try await run {
            let row = try await SettingRow.find(key, on: self.database) ?? SettingRow(key: key)
            row.value = value
            try await row.save(on: self.database)
        }
    }

    private func decode(_ row: AssetRow) -> DownloadAsset? {
        try? decoder.decode(DownloadAsset.self, from: row.record)
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
