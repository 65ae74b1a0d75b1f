import FluentKit
import SQLKit
import SatchelStorage

/// The devices' last syncs, a row each (`backplane_device_syncs`: device ID, time), apart from the devices' rows: they
/// are written every few milliseconds while devices sync, the devices' rows seldom.
///
/// On a SQLite store the table has a file of its own (``file``): every commit to a SQLite file makes each of its
/// readers drop its page cache, so sync times written in the store's file made every sync's reads start cold, and
/// more so the larger the store (a sync's p99 on 100,000 devices was 1.17–1.26 times that on 1,000; 1.05–1.10 with
/// the times in their own file). On PostgreSQL the table is in the one database: a narrow row per device, whose
/// updates leave the devices' wide rows and their indexes alone.
public enum SyncTimesTable {
    /// A SQLite store's file for the table, `satchel-sync-times.sqlite` (give it to the store's database when it
    /// opens): the table, then the times the store's file held moved in.
    public static let file = StoreFile(name: "satchel-sync-times.sqlite") { store in [CreateSyncTimesTable(), MoveSyncTimesIntoTheirFile(store: store)] }

    /// Makes the table unless it is there: on SQLite clustered by device ID (one B-tree, a write touches one page),
    /// on PostgreSQL with room in each page for a row's next version.
    static func create(on sql: any SQLDatabase) async throws {
        if sql.dialect.name == "sqlite" {
            try await sql.raw("CREATE TABLE IF NOT EXISTS backplane_device_syncs (device_id TEXT PRIMARY KEY NOT NULL, last_sync REAL NOT NULL) WITHOUT ROWID").run()
        } else {
            try await sql.raw("""
                CREATE TABLE IF NOT EXISTS backplane_device_syncs (device_id TEXT PRIMARY KEY, last_sync TIMESTAMPTZ NOT NULL) WITH (fillfactor = 85)
                """).run()
        }
    }
}

/// Moves the devices' sync times out of their rows into ``SyncTimesTable`` in the same database (on a SQLite store,
/// ``MoveSyncTimesIntoTheirFile`` takes them on into the table's own file), then drops the column they were in.
struct MoveSyncTimesToTheirTable: AsyncMigration {
    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await SyncTimesTable.create(on: sql)
        try await sql.raw("""
            INSERT INTO backplane_device_syncs (device_id, last_sync) SELECT device_id, last_sync FROM backplane_devices WHERE last_sync IS NOT NULL
            """).run()
        try await sql.raw("ALTER TABLE backplane_devices DROP COLUMN last_sync").run()
    }

    func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await database.schema(BackplaneDeviceModel.schema).field("last_sync", .datetime).update()
        try await sql.raw("DROP TABLE backplane_device_syncs").run()
    }
}

/// The table in its own file (``SyncTimesTable/file``).
struct CreateSyncTimesTable: AsyncMigration {
    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await SyncTimesTable.create(on: sql)
    }

    func revert(on database: any Database) async throws {
        try await (database as? any SQLDatabase)?.raw("DROP TABLE backplane_device_syncs").run()
    }
}

/// Moves the sync times the store's file holds (those ``MoveSyncTimesToTheirTable`` took out of the devices' rows) into
/// the table's own file: copied (a time already there is kept when later), then deleted from the store's file. Either
/// step can run again after a crash. Outside a transaction: SQLite attaches a file only outside one.
struct MoveSyncTimesIntoTheirFile: AsyncMigration, RunsOutsideATransaction {
    /// The store's file.
    let store: String

    func prepare(on database: any Database) async throws {
        try await AttachedStore.with(store, on: database) { sql in
            try await sql.raw("""
                INSERT INTO main.backplane_device_syncs (device_id, last_sync) SELECT device_id, last_sync FROM store.backplane_device_syncs WHERE true
                ON CONFLICT (device_id) DO UPDATE SET last_sync = excluded.last_sync WHERE main.backplane_device_syncs.last_sync < excluded.last_sync
                """).run()
            try await sql.raw("DELETE FROM store.backplane_device_syncs").run()
        }
    }

    func revert(on database: any Database) async throws {}
}
