import Foundation
import SQLKit
import SatchelBackplane
@testable import SatchelLicensing
import SatchelStorage
import Testing

/// Issue 47, point 1: every statement a device's or a player's request runs reads a bounded number of rows through
/// an index. Each hot query is put to SQLite's `EXPLAIN QUERY PLAN` and PostgreSQL's `EXPLAIN` on a store seeded with
/// enough rows (and statistics) that a missing index would show as a scan of a growing table.
@Suite("Query plans at scale")
struct QueryPlanTests {
    /// A PostgreSQL database of its own (scripts/test makes it afresh): the seeded rows would disturb other suites.
    static let postgres = ProcessInfo.processInfo.environment["SATCHEL_PLANS_DATABASE_URL"]
    /// Rows seeded in each growing table.
    static let rows = 20_000

    static var hot: [HotQuery] { LicensingQueries.hot + BackplaneQueries.hot }
    static var growing: Set<String> { LicensingQueries.growingTables.union(BackplaneQueries.growingTables) }

    @Test("a scan of a month's partition, or of the default one, counts as a scan of its table")
    func partitionScans() {
        let plan = ["Append  (cost=0.00..35.50 rows=10 width=8)", "  ->  Seq Scan on backplane_events_p202611  (cost=0.00..1.00 rows=1 width=8)",
                    "  ->  Seq Scan on satchel_licenses_default  (cost=0.00..1.00 rows=1 width=8)", "  ->  Seq Scan on satchel_licenses_p2026  (cost=0.00..1.00)"]
        #expect(QueryPlan.scans(in: plan, of: Self.growing, dialect: "postgresql") == ["backplane_events", "satchel_licenses"])
    }

    @Test("every hot query reads through an index on SQLite")
    func sqlite() async throws {
        let directory = NSTemporaryDirectory() + "satchel-plans-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.check(try await LicensingDatabase(dataDirectory: directory, url: nil, more: BackplaneMigrations.all))
    }

    @Test("every hot query reads through an index on PostgreSQL", .enabled(if: postgres != nil))
    func postgresql() async throws {
        try await Self.check(try await LicensingDatabase(dataDirectory: NSTemporaryDirectory(), url: Self.postgres, more: BackplaneMigrations.all))
    }

    static func check(_ database: LicensingDatabase) async throws {
        do {
            let sql = try database.sql()
            try await seed(sql)
            #expect(hot.count >= 20, "the catalogue names the device's and player's statements")
            for query in hot {
                let plan = try await QueryPlan.lines(query.sql, on: sql)
                let scans = QueryPlan.scans(in: plan, of: growing, dialect: sql.dialect.name)
                #expect(scans.isEmpty, "\(query.name) reads \(scans.joined(separator: ", ")) whole on \(sql.dialect.name): \(plan.joined(separator: " | "))")
            }
            for query in LicensingQueries.listings + BackplaneQueries.listings {
                let plan = try await QueryPlan.lines(query.sql, on: sql)
                let unbounded = QueryPlan.unbounded(in: plan, of: growing, dialect: sql.dialect.name)
                #expect(unbounded.isEmpty, "\(query.name) reads \(unbounded.joined(separator: ", ")) on \(sql.dialect.name): \(plan.joined(separator: " | "))")
            }
            // The check itself: a statement without an index is seen as a scan (the test would catch a dropped index).
            let unindexed = try await QueryPlan.lines("SELECT key_id FROM satchel_keys WHERE iv = \(bind: "00")", on: sql)
            #expect(QueryPlan.scans(in: unindexed, of: growing, dialect: sql.dialect.name) == ["satchel_keys"], "\(unindexed)")
            let sorted = try await QueryPlan.lines("SELECT key_id FROM satchel_keys ORDER BY iv LIMIT 10", on: sql)
            #expect(!QueryPlan.unbounded(in: sorted, of: growing, dialect: sql.dialect.name).isEmpty, "a page sorted after reading every row is seen: \(sorted)")
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }

    /// Every growing table filled with `rows` rows (emptied first: PostgreSQL's database outlives a run), then statistics.
    static func seed(_ sql: any SQLDatabase) async throws {
        let postgres = sql.dialect.name == "postgresql"
        let tables = ["satchel_device_licenses", "satchel_keys", "satchel_assets", "satchel_devices", "satchel_device_nonces", "satchel_licenses",
                      "backplane_users", "backplane_devices", "backplane_grants", "backplane_commands", "backplane_slots"]
        for table in tables { try await sql.raw("DELETE FROM \(ident: table)").run() }
        let numbers: SQLQueryString = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < \(literal: rows))"
        let uuid: SQLQueryString = postgres ? "gen_random_uuid()" : "randomblob(16)"
        let (now, yes, no, blob) = (Date(), true, false, Data([0]))
        let seeds: [SQLQueryString] = [
            "INSERT INTO satchel_assets (asset_id, fairplay_asset_id, policy, created_at) \(numbers) SELECT 'asset-' || i, 'fp-' || i, '{}', \(bind: now) FROM n",
            """
            INSERT INTO satchel_keys (key_id, asset_id, sealed_key, iv, created_at) \(numbers)
            SELECT 'k' || i, 'asset-' || (i / 2 + 1), \(bind: blob), '00', \(bind: now) FROM n
            """,
            """
            INSERT INTO satchel_devices (device_id, subject, public_key, fingerprint, registered_at, disabled) \(numbers)
            SELECT 'device-' || i, 'user-' || (i / 4 + 1), '{}', 'f' || i, \(bind: now), \(bind: no) FROM n
            """,
            """
            INSERT INTO satchel_device_licenses (license_id, device_id, subject, asset_id, persistent, state, rights, issued_at) \(numbers)
            SELECT 'license-' || i, 'device-' || (i / 3 + 1), 'user-1', 'asset-1', \(bind: no), 'active', '{}', \(bind: now) FROM n
            """,
            "INSERT INTO satchel_device_nonces (id, device_id, nonce, seen_at) \(numbers) SELECT \(uuid), 'device-' || (i / 5 + 1), 'n' || i, \(bind: now) FROM n",
            """
            INSERT INTO satchel_licenses (id, asset_id, key_id, subject, type, issued_at) \(numbers)
            SELECT \(uuid), 'asset-' || (i / 7 + 1), 'k' || i, 'user-' || (i / 9 + 1), 'satchel', \(bind: now) FROM n
            """,
            "INSERT INTO backplane_users (user_id) \(numbers) SELECT 'user-' || i FROM n",
            """
            INSERT INTO backplane_devices (device_id, user_id, name, platform, download_enabled, state, registered_at, next_sequence) \(numbers)
            SELECT 'device-' || i, 'user-' || (i / 4 + 1), 'phone', 'linux', \(bind: yes), 'active', \(bind: now), 1 FROM n
            """,
            """
            INSERT INTO backplane_grants (grant_id, device_id, user_id, asset_id, granted_at) \(numbers)
            SELECT 'grant-' || i, 'device-' || (i / 3 + 1), 'user-' || (i / 12 + 1), 'asset-' || i, \(bind: now) FROM n
            """,
            """
            INSERT INTO backplane_commands (command_id, device_id, sequence, body, acknowledged) \(numbers)
            SELECT 'command-' || i, 'device-' || (i / 10 + 1), i, '{}', \(bind: yes) FROM n
            """,
            """
            INSERT INTO backplane_slots (slot_id, user_id, device_id, asset_id, acquired_at, expires_at) \(numbers)
            SELECT 'slot-' || i, 'user-' || (i / 2 + 1), 'device-' || i, 'asset-1', \(bind: now), \(bind: now) FROM n
            """,
        ]
        for seed in seeds { try await sql.raw(seed).run() }
        try await sql.raw("ANALYZE").run()
    }
}
