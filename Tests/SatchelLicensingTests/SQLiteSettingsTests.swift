import FluentSQLiteDriver
import Foundation
import Logging
import SQLKit
import SatchelBytes
import SatchelLicensing
import SatchelStorage
import Testing

/// Issue 48: a SQLite store waits for another process's lock by sleeping (`busy_timeout`; the driver's own handler
/// retries at once, for ever, spinning a thread), writes ahead, and syncs as its durability argument says.
@Suite("SQLite settings")
struct SQLiteSettingsTests {
    @Test("the license store's SQLite file: a 5 s busy timeout, write-ahead logging, synced at checkpoints (NORMAL)")
    func licenseStore() async throws {
        try await Self.withStore { database in
            let sql = try database.sql()
            func pragma(_ name: String) async throws -> String? {
                guard let row = try await sql.raw("PRAGMA \(unsafeRaw: name)").first(), let column = row.allColumns.first else { return nil }
                return (try? row.decode(column: column, as: String.self)) ?? (try? row.decode(column: column, as: Int.self)).map(String.init)
            }
            #expect(try await pragma("busy_timeout") == "5000")
            #expect(try await pragma("journal_mode") == "wal")
            #expect(try await pragma("synchronous") == "1", "NORMAL")
            guard let reader = database.reader as? any SQLDatabase else { Issue.record("no SQL reader"); return }
            let readerTimeout = try await reader.raw("PRAGMA busy_timeout").first().flatMap { try? $0.decode(column: $0.allColumns.first ?? "", as: Int.self) }
            let readOnly = try await reader.raw("PRAGMA query_only").first().flatMap { try? $0.decode(column: $0.allColumns.first ?? "", as: Int.self) }
            #expect(readerTimeout == 5000 && readOnly == 1, "the reader is a read-only connection that waits by sleeping")
        }
    }

    @Test("a key lookup's read does not wait for the writer: while a transaction holds the writer's connection for 1.5 s, the reader answers at once, without its uncommitted row; after the commit it sees it")
    func readerBesideWriter() async throws {
        try await Self.withStore { database in
            guard let reader = database.reader as? any SQLDatabase else { Issue.record("no SQL reader"); return }
            let count: @Sendable () async throws -> Int = {
                try await reader.raw("SELECT COUNT(*) AS n FROM satchel_rollups").first()?.decode(column: "n", as: Int.self) ?? -1
            }
            let writer = Task {
                try await database.database.transaction { db in
                    try await (db as? any SQLDatabase)?.raw("INSERT INTO satchel_rollups (hour, series, slot, count) VALUES (0, 'test', 0, 1)").run()
                    try await Task.sleep(for: .milliseconds(1500))
                }
            }
            try await Task.sleep(for: .milliseconds(300))
            let clock = ContinuousClock(), start = clock.now
            let during = try await count()
            let waited = start.duration(to: clock.now)
            #expect(during == 0 && waited < .milliseconds(1_100), "read in \(waited) while the writer held its connection")
            try await writer.value
            #expect(try await count() == 1, "the committed row is seen")
        }
    }

    @Test("the license store's key lookups go to two read-only connections in turn: while a long read holds one, a lookup on the next is answered before it ends")
    func twoReaders() async throws {
        try await Self.withStore { database in
            guard let first = database.reader as? any SQLDatabase, let second = database.reader as? any SQLDatabase,
                  let third = database.reader as? any SQLDatabase else { Issue.record("no SQL readers"); return }
            // Two connections: a setting changed on the first is not the second's; the third handle is the first again.
            func cacheSize(_ sql: any SQLDatabase) async throws -> Int? {
                try await sql.raw("PRAGMA cache_size").first().flatMap { try? $0.decode(column: $0.allColumns.first ?? "", as: Int.self) }
            }
            try await first.raw("PRAGMA cache_size = -65000").run()
            #expect(try await cacheSize(second) == -65536)
            #expect(try await cacheSize(third) == -65000)
            try await first.raw("PRAGMA cache_size = -65536").run()
            let longEnded = Locked(false)
            let long = Task {
                _ = try await first.raw("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000) SELECT count(*) AS c FROM n").first()
                longEnded.withLock { $0 = true }
            }
            try await Task.sleep(for: .milliseconds(100))
            let answered = try await second.raw("SELECT COUNT(*) AS n FROM satchel_keys").first()?.decode(column: "n", as: Int.self)
            #expect(answered == 0 && !longEnded.withLock { $0 }, "the lookup waited for the long read")
            try await long.value
        }
    }

    @Test("a large store's commits never checkpoint (the log grows past SQLite's thousand pages, the file does not); its checkpointer copies the log into the file beside them")
    func checkpointsOffTheWriter() async throws {
        let directory = NSTemporaryDirectory() + "satchel-checkpoints-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func size(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1 }
        for (name, interval) in [("idle", Duration.seconds(3600)), ("busy", Duration.milliseconds(100))] {
            let path = directory + "/\(name).sqlite"
            let store = try await FluentStore.open(.sqlite(.file(path)), as: .sqlite, migrations: [],
                                                   sqlite: SQLiteSettings(durability: .processCrash, large: true, checkpointInterval: interval),
                                                   logger: Logger(label: "test"))
            do {
                guard let sql = store.database as? any SQLDatabase else { throw StorageError.cannotOpen("no SQL") }
                let automatic = try await sql.raw("PRAGMA wal_autocheckpoint").first().flatMap { try? $0.decode(column: $0.allColumns.first ?? "", as: Int.self) }
                #expect(automatic == 0, "the writer does not checkpoint")
                try await sql.raw("CREATE TABLE filler (bytes BLOB)").run()
                // Eight commits of 1 MB: twice the log SQLite would have copied into the file at a commit.
                for _ in 0..<8 {
                    try await sql.raw("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) INSERT INTO filler SELECT randomblob(1000) FROM n").run()
                }
                if name == "idle" {
                    #expect(size(path) < 1_000_000 && size(path + "-wal") > 8_000_000, "file \(size(path)), log \(size(path + "-wal")): no commit checkpointed")
                } else {
                    let deadline = ContinuousClock.now + .seconds(10)
                    while size(path) < 8_000_000, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
                    #expect(size(path) >= 8_000_000, "the checkpointer copied the log into the file: \(size(path))")
                }
            } catch {
                await store.shutdown()
                throw error
            }
            await store.shutdown()
        }
    }

    /// Runs `body` on a new SQLite license store, shut down and deleted after it, whatever it throws.
    static func withStore(_ body: (LicensingDatabase) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "satchel-sqlite-settings-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = try await LicensingDatabase(dataDirectory: directory, url: nil)
        do {
            try await body(database)
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }
}
