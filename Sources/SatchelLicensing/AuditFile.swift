import FluentKit
import SQLKit
import SatchelStorage

/// A SQLite store's audit in a file of its own, `satchel-audit.sqlite` beside `satchel.sqlite`: the licenses issued,
/// the FairPlay sync reports and their hourly roll-ups (`license:*`). SQLite lets one connection write a file at a
/// time, so in one file every fold of the audit journal held the writer that device licenses, registrations and event
/// batches wait for, longer the larger the audit's indexes; and every commit made each reader of the keys drop its page
/// cache. In its own file the audit has its own writer and its commits leave the keys' readers alone. (PostgreSQL keeps
/// the audit in its one database: its writers do not queue behind each other.)
enum AuditFile {
    /// The file's name in the data directory.
    static let name = "satchel-audit.sqlite"

    /// The audit's tables.
    static let tables = [LicensingQueries.licenseHistory.name, LicensingQueries.syncHistory.name]

    /// The file's migrations: its tables and indexes, the roll-ups, then the audit a store kept before (in
    /// `satchel.sqlite`, at `store`) moved in.
    static func migrations(store: String) -> [any Migration] {
        [CreateAuditTables(), CreateRollups(name: "satchel-audit-rollups"), MoveAuditIntoItsFile(store: store)]
    }
}

/// The audit's tables and their indexes, as the store's own migrations make them (`CreateLicensingSchema`,
/// `AddLicenseCustomData`, `IndexForScale`). Found all there, they are kept: an earlier Satchel, whose migrations ran
/// outside a transaction, may have been killed after they were made and before the migration was logged.
struct CreateAuditTables: AsyncMigration {
    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        let made = try await sql.raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name = \(bind: AuditFile.tables[0])").first()
        guard made == nil else { return }
        try await CreateLicensingSchema.licenses(on: database).field("custom_data", .string).create()
        try await CreateLicensingSchema.syncs(on: database).create()
        try await IndexForScale.create(IndexForScale.indexes.filter { AuditFile.tables.contains($0.table) }, on: sql)
    }

    func revert(on database: any Database) async throws {
        for schema in AuditFile.tables { try await database.schema(schema).delete() }
    }
}

/// Moves the audit a store kept in `satchel.sqlite` (before the audit had a file of its own) into the audit's file:
/// each table's rows copied (a row already there is left as it is), then deleted from the store, then the `license:*`
/// roll-ups the same way. Each step can run again after a crash: nothing is lost or counted twice. It runs outside a
/// transaction (SQLite attaches a file only outside one).
struct MoveAuditIntoItsFile: AsyncMigration, RunsOutsideATransaction {
    /// The store's file.
    let store: String

    func prepare(on database: any Database) async throws {
        try await AttachedStore.with(store, on: database) { sql in
            let columns = [LicensingQueries.licenseHistory.name: "id, asset_id, key_id, subject, type, issued_at, custom_data",
                           LicensingQueries.syncHistory.name: "id, content_id, duration_to_expiry, subject, received_at"]
            for table in AuditFile.tables {
                guard let list = columns[table] else { continue }
                try await sql.raw("INSERT OR IGNORE INTO main.\(ident: table) (\(unsafeRaw: list)) SELECT \(unsafeRaw: list) FROM store.\(ident: table)").run()
                try await sql.raw("DELETE FROM store.\(ident: table)").run()
            }
            let licenses: SQLQueryString = "series LIKE 'license:%'"
            try await sql.raw("INSERT OR IGNORE INTO main.satchel_rollups SELECT hour, series, slot, count FROM store.satchel_rollups WHERE \(licenses)").run()
            try await sql.raw("DELETE FROM store.satchel_rollups WHERE \(licenses)").run()
        }
    }

    func revert(on database: any Database) async throws {}
}
