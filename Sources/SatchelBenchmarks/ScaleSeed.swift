import Foundation
import SQLKit
import SatchelBackplane

/// The scale benchmark's users, devices and history, written with multi-row SQL (`INSERT … SELECT` over a series of
/// numbers): names `user-0000001`, `device-0000001`, audit records and events spread over the last 60 days, each
/// device synced in the last day (an operator's devices have: a sync then updates its time, where a device never
/// synced would add a row). The audit goes to `audit`, the sync times to `syncTimes` (a SQLite store's own files for them;
/// PostgreSQL's one database).
enum ScaleSeed {
    static func rows(_ sizes: ScaleBenchmark.Sizes, on sql: any SQLDatabase, audit: any SQLDatabase, syncTimes: any SQLDatabase) async throws {
        let postgres = sql.dialect.name == "postgresql"
        func numbers(_ count: Int) -> SQLQueryString {
            postgres ? "SELECT i FROM generate_series(1, \(literal: count)) AS n(i)"
                : "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(literal: count)) SELECT i FROM n"
        }
        func name(_ prefix: String, _ number: SQLQueryString) -> SQLQueryString {
            postgres ? "\(literal: prefix) || lpad((\(number))::text, 7, '0')" : "printf('\(unsafeRaw: prefix)%07d', \(number))"
        }
        func ago(_ seconds: SQLQueryString) -> SQLQueryString {
            postgres ? "now() - make_interval(secs => \(seconds))" : "(unixepoch() - (\(seconds)))"
        }
        // SQLite: random in its first part, unique by the row's number (SQLite 3.54 evaluates `randomblob()` once for
        // all the rows of this statement).
        let uuid: SQLQueryString = postgres ? "gen_random_uuid()" : "printf('%08x-0000-4000-8000-%012x', abs(random()) % 4294967296, i)"
        let user: SQLQueryString = "(i % \(literal: sizes.users)) + 1"
        let (yes, no) = (true, false)
        let auditRecords: SQLQueryString = """
            INSERT INTO satchel_licenses (id, asset_id, key_id, subject, type, issued_at)
            SELECT \(uuid), \(name("asset-", "i % 100000")), 'k', \(name("user-", user)), 'satchel', \(ago("i % 5184000")) FROM (\(numbers(sizes.audit))) AS n
            """
        let statements: [SQLQueryString] = [
            "INSERT INTO backplane_users (user_id) SELECT \(name("user-", "i")) FROM (\(numbers(sizes.users))) AS n",
            """
            INSERT INTO satchel_devices (device_id, subject, public_key, fingerprint, registered_at, disabled)
            SELECT \(name("device-", "i")), \(name("user-", user)), '{}', 'f' || i, \(ago("i % 5184000")), \(bind: no) FROM (\(numbers(sizes.devices))) AS n
            """,
            """
            INSERT INTO backplane_devices (device_id, user_id, name, platform, download_enabled, state, registered_at, next_sequence)
            SELECT \(name("device-", "i")), \(name("user-", user)), 'phone', 'linux', \(bind: yes), 'active', \(ago("i % 5184000")), 1
            FROM (\(numbers(sizes.devices))) AS n
            """,
            """
            INSERT INTO backplane_events (record_id, device_id, user_id, kind, at, received_at, ordinal)
            SELECT \(name("device-", "(i % \(literal: sizes.devices)) + 1")) || ':seed-' || i, \(name("device-", "(i % \(literal: sizes.devices)) + 1")),
            \(name("user-", user)), 'play-start', \(ago("(\(literal: sizes.events) - i) % 5184000")), \(ago("(\(literal: sizes.events) - i) % 5184000")), i
            FROM (\(numbers(sizes.events))) AS n
            """,
        ]
        let syncs: SQLQueryString = """
            INSERT INTO backplane_device_syncs (device_id, last_sync) SELECT \(name("device-", "i")), \(ago("i % 86400")) FROM (\(numbers(sizes.devices))) AS n
            """
        if postgres {
            // The tables have no keys into each other: each statement on a connection of its own, the server's cores at once.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for statement in statements + [auditRecords, syncs] { group.addTask { try await sql.raw(statement).run() } }
                try await group.waitForAll()
            }
        } else {
            for statement in statements { try await sql.raw(statement).run() }
            try await audit.raw(auditRecords).run()
            try await syncTimes.raw(syncs).run()
        }
    }

    /// Brings a freshly loaded store to the state an operator's store is in at rest, so the first timed requests do
    /// not pay for the load: statistics taken; on PostgreSQL every row's visibility recorded (`VACUUM`: else the first
    /// read of each row writes its hint bits, and autovacuum starts in the middle of the timing) and the pages the load
    /// and the vacuum dirtied written out (`CHECKPOINT`: else the server's checkpointer writes gigabytes during the
    /// timing, and every commit's sync waits behind it); on SQLite the log copied into the file and emptied (else the
    /// first commit's checkpoint copies the whole load).
    static func settle(_ sql: any SQLDatabase, files: [any SQLDatabase]) async throws {
        try await settle(sql)
        for file in files where file.dialect.name != "postgresql" { try await settle(file) }
    }

    private static func settle(_ sql: any SQLDatabase) async throws {
        if sql.dialect.name == "postgresql" {
            try await sql.raw("VACUUM ANALYZE").run()
            do {
                try await sql.raw("CHECKPOINT").run()
            } catch {
                print("  (no CHECKPOINT after seeding: the role needs pg_checkpoint, GRANT pg_checkpoint TO it; the writes of the load may slow the figures)")
            }
        } else {
            try await sql.raw("ANALYZE").run()
            try await sql.raw("PRAGMA wal_checkpoint(TRUNCATE)").run()
        }
    }

    /// The database's size in bytes: PostgreSQL's own figure, or SQLite's files (the store's, the audit's and the sync
    /// times') with their write-ahead logs.
    static func databaseBytes(_ sql: any SQLDatabase, directory: String) async throws -> Int? {
        if sql.dialect.name == "postgresql" {
            return try await sql.raw("SELECT pg_database_size(current_database()) AS n").first()?.decode(column: "n", as: Int.self)
        }
        let files = ["satchel.sqlite", "satchel-audit.sqlite", SyncTimesTable.file.name].flatMap { [$0, $0 + "-wal"] }.map { (directory as NSString).appendingPathComponent($0) }
        return files.compactMap { try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int }.reduce(0, +)
    }
}
