import Foundation
import SQLKit
import SatchelBytes
@testable import SatchelLicensing
import SatchelStorage
import Testing

/// Issue 47: a SQLite store keeps its audit in a file of its own (`satchel-audit.sqlite`), so the audit's folds never
/// hold the writer a device's request waits for. A store from before, whose audit is in `satchel.sqlite`, has it moved
/// when it opens: every record once, the hourly counts with them, whatever a crash cut short.
@Suite("Audit file")
struct AuditFileTests {
    static let start = Date(timeIntervalSince1970: 1_900_000_000)

    static func count(_ table: String, on sql: any SQLDatabase, where condition: SQLQueryString = "1 = 1") async throws -> Int {
        try await sql.raw("SELECT COUNT(*) AS n FROM \(ident: table) WHERE \(condition)").first()?.decode(column: "n", as: Int.self) ?? -1
    }

    /// The audit's licenses, sync reports and license roll-ups' total on `sql`.
    static func held(on sql: any SQLDatabase) async throws -> [Int] {
        let rollups = try await sql.raw("SELECT COALESCE(SUM(count), 0) AS n FROM satchel_rollups WHERE series LIKE 'license:%'").first()?.decode(column: "n", as: Int.self)
        return [try await count("satchel_licenses", on: sql), try await count("satchel_syncs", on: sql), rollups ?? -1]
    }

    /// Runs `body` on a store opened in `directory` (`AuditJournalTests.store`), closed afterwards whatever happens.
    static func withStore(_ directory: String, _ body: (FluentKeyStore, LicensingDatabase) async throws -> Void) async throws {
        let (store, database) = try await AuditJournalTests.store(directory)
        do {
            try await body(store, database)
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }

    @Test("licenses and sync reports go to the audit's own file (owner only); the store's file keeps none of them")
    func ownFile() async throws {
        let directory = try AuditJournalTests.directory("audit-file")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.withStore(directory) { store, database async throws in
            for index in 0..<5 {
                try await store.recordLicense(assetID: "film", keyID: "k\(index)", subject: "user", type: "clearkey-temporary", customData: nil,
                                              at: Self.start.addingTimeInterval(Double(index)))
            }
            try await store.recordSync(contentID: "film", durationToExpiry: 60, subject: "user", at: Self.start)
            #expect(try await store.licenses(limit: 10).count == 5)
            let (main, audit) = (try database.sql(), try database.auditSQL())
            #expect(try await Self.held(on: audit) == [5, 1, 5], "licenses, sync reports and the hourly counts in the audit's file")
            #expect(try await Self.held(on: main) == [0, 0, 0], "nothing in satchel.sqlite")
            let hours = [Date(timeIntervalSince1970: TimeInterval(Rollups.hour(of: Self.start)))]
            #expect(try await store.issuedPerHour(types: ["clearkey-temporary"], hours: hours) == ["clearkey-temporary": [5]])
        }
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/" + AuditFile.name)[.posixPermissions] as? Int
        #expect(mode == 0o600, "the audit names who was issued what: owner only, not \(String(mode ?? 0, radix: 8))")
    }

    @Test("a process killed after the audit file's tables were made, before that was logged: the next opening keeps them and their records")
    func tablesMadeNotLogged() async throws {
        let directory = try AuditJournalTests.directory("audit-unlogged")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.withStore(directory) { store, database async throws in
            try await store.recordLicense(assetID: "film", keyID: "k", subject: "user", type: "clearkey-temporary", customData: nil, at: Self.start)
            try await database.audit.flush()
            try await database.auditSQL().raw("DELETE FROM _fluent_migrations WHERE name LIKE '%CreateAuditTables%'").run()
        }
        try await Self.withStore(directory) { _, database async throws in
            #expect(try await Self.held(on: try database.auditSQL()) == [1, 0, 1])
            #expect(try await database.auditSQL().raw("SELECT COUNT(*) AS n FROM _fluent_migrations WHERE name LIKE '%CreateAuditTables%'").first()?
                .decode(column: "n", as: Int.self) == 1, "logged this time")
        }
    }

    @Test("a store whose audit is in satchel.sqlite has it moved on opening: each record once, the hourly counts with them, even after a move cut short")
    func moveFromStore() async throws {
        let directory = try AuditJournalTests.directory("audit-move")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // A store as it was: the audit's rows and roll-ups in satchel.sqlite, no audit file.
        let before = try await LicensingDatabase(dataDirectory: directory, url: nil)
        do {
            let main = try before.sql()
            try await main.raw("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
                INSERT INTO satchel_licenses (id, asset_id, key_id, subject, type, issued_at, custom_data)
                SELECT printf('00000000-0000-4000-8000-%012d', i), 'film-' || i, 'k', 'user', 'satchel', \(bind: Self.start) + i, NULL FROM n
                """).run()
            try await main.raw("""
                INSERT INTO satchel_syncs (id, content_id, duration_to_expiry, subject, received_at)
                VALUES ('00000000-0000-4000-8000-000000000001', 'film', -5, 'user', \(bind: Self.start))
                """).run()
            try await main.raw("INSERT INTO satchel_rollups (hour, series, slot, count) VALUES (\(bind: Rollups.hour(of: Self.start)), 'license:satchel', 3, 300)").run()
            try await main.raw("INSERT INTO satchel_rollups (hour, series, slot, count) VALUES (\(bind: Rollups.hour(of: Self.start)), 'device-license:streaming', 0, 7)").run()
        } catch {
            await before.shutdown()
            throw error
        }
        await before.shutdown()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: directory + "/" + AuditFile.name + suffix) }

        try await Self.withStore(directory) { store, database async throws in
            let (main, audit) = (try database.sql(), try database.auditSQL())
            #expect(try await Self.held(on: audit) == [300, 1, 300], "moved")
            #expect(try await Self.held(on: main) == [0, 0, 0], "and gone from the store")
            #expect(try await Self.count("satchel_rollups", on: main, where: "series = 'device-license:streaming'") == 1, "the store's own counts stay")
            #expect(try await store.licenses(limit: 1000).count == 300)

            // A move cut short after copying, before deleting: the rows are in both files; run again, each is there once.
            try await main.raw("""
                WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
                INSERT INTO satchel_licenses (id, asset_id, key_id, subject, type, issued_at, custom_data)
                SELECT printf('00000000-0000-4000-8000-%012d', i), 'film-' || i, 'k', 'user', 'satchel', \(bind: Self.start) + i, NULL FROM n
                """).run()
            try await main.raw("INSERT INTO satchel_rollups (hour, series, slot, count) VALUES (\(bind: Rollups.hour(of: Self.start)), 'license:satchel', 3, 300)").run()
            try await MoveAuditIntoItsFile(store: directory + "/satchel.sqlite").prepare(on: database.audit.database)
            #expect(try await Self.held(on: audit) == [300, 1, 300], "each record and count once")
            #expect(try await Self.held(on: main) == [0, 0, 0])
        }
    }
}
