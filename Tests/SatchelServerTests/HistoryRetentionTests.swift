import Foundation
import SQLKit
import SatchelBackplane
import SatchelBytes
@testable import SatchelLicensing
@testable import SatchelServer
import SatchelStorage
import Testing

/// Issue 47, point 4: history that grows forever stays cheap. The charts' hourly roll-ups, kept as records arrive,
/// equal a count over the raw rows (a record sent again counted once); a retention sweep deletes what is older than
/// the setting, in batches, with its roll-ups, and leaves the rest intact.
@Suite("History retention", .serialized)
struct HistoryRetentionTests {
    /// A PostgreSQL database of its own (scripts/test makes it afresh): the test empties the audit and the events.
    static let postgres = ProcessInfo.processInfo.environment["SATCHEL_HISTORY_DATABASE_URL"]

    @Test("roll-ups equal the raw counts; a sweep keeps 30 days of audit and 10 of events, exactly (SQLite)")
    func retentionSQLite() async throws {
        let directory = NSTemporaryDirectory() + "satchel-retention-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Self.retention(try await LicensingDatabase(dataDirectory: directory, url: nil, more: BackplaneMigrations.all))
    }

    @Test("roll-ups equal the raw counts; a sweep keeps 30 days of audit and 10 of events, exactly (PostgreSQL)", .enabled(if: postgres != nil))
    func retentionPostgreSQL() async throws {
        try await Self.retention(try await LicensingDatabase(dataDirectory: NSTemporaryDirectory(), url: Self.postgres, more: BackplaneMigrations.all))
    }

    /// The roll-ups as (hour, series) → count, and the same counted from the raw rows: the audit's on `audit` (on SQLite
    /// a file of its own), the events' on `sql`.
    static func rollupsAndRaw(_ sql: any SQLDatabase, audit: any SQLDatabase) async throws -> (rollups: [String: Int], raw: [String: Int]) {
        var rollups: [String: Int] = [:], raw: [String: Int] = [:]
        for (database, series) in [(audit, "license:%"), (sql, "event:%")] {
            for row in try await database.raw("""
                SELECT hour, series, CAST(SUM(count) AS BIGINT) AS count FROM satchel_rollups WHERE series LIKE \(bind: series) GROUP BY hour, series
                """).all() {
                rollups["\(try row.decode(column: "hour", as: Int64.self)) \(try row.decode(column: "series", as: String.self))"] = try row.decode(column: "count", as: Int.self)
            }
        }
        for row in try await audit.raw("SELECT type, issued_at FROM satchel_licenses").all() {
            raw["\(Rollups.hour(of: try row.decode(column: "issued_at", as: Date.self))) license:\(try row.decode(column: "type", as: String.self))", default: 0] += 1
        }
        for row in try await sql.raw("SELECT kind, at FROM backplane_events").all() {
            raw["\(Rollups.hour(of: try row.decode(column: "at", as: Date.self))) event:\(try row.decode(column: "kind", as: String.self))", default: 0] += 1
        }
        return (rollups, raw)
    }

    static func retention(_ database: LicensingDatabase) async throws {
        do {
            let (sql, audit) = (try database.sql(), try database.auditSQL())
            for table in ["satchel_licenses", "satchel_syncs", "satchel_rollups"] { try await audit.raw("DELETE FROM \(ident: table)").run() }
            for table in ["backplane_events", "satchel_rollups"] { try await sql.raw("DELETE FROM \(ident: table)").run() }
            let store = FluentKeyStore(database: database, kek: try KeyEncryptionKey(SecretBytes(SecureRandom.bytes(32))))
            let now = Date(timeIntervalSince1970: 1_800_000_000.5)
            let types = ["fairplay", "satchel", "clearkey-temporary"]
            // 240 licenses, one every 6 hours back over 60 days; 480 events, one every 3 hours, sent in batches (one batch twice).
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<240 {
                    group.addTask {
                        try await store.recordLicense(assetID: "a", keyID: "k", subject: "u", type: types[index % 3], at: now.addingTimeInterval(-Double(index) * 21_600))
                    }
                }
                try await group.waitForAll()
            }
            let events = FluentEventStore(database: sql)
            let all = (0..<480).map { DeviceEvent(eventID: "event-number-\($0)", kind: $0 % 2 == 0 ? .playStart : .downloadCompleted, time: now.addingTimeInterval(-Double($0) * 10_800)) }
            for start in stride(from: 0, to: all.count, by: 100) {
                _ = try await events.record(Array(all[start..<min(start + 100, all.count)]), device: "phone", user: "alice", received: now)
            }
            #expect(try await events.record(Array(all[0..<100]), device: "phone", user: "alice", received: now) == 0, "a batch sent again adds nothing")
            try await database.audit.flush()
            let before = try await rollupsAndRaw(sql, audit: audit)
            #expect(before.raw.values.reduce(0, +) == 720 && before.rollups == before.raw, "the roll-ups equal the raw counts")

            let retention = HistoryRetention(auditDays: 30, eventDays: 10)
            let deleted = try await retention.sweep(at: now, audit: audit, events: sql)
            let auditCutoff = Retention.cutoff(days: 30, at: now), eventCutoff = Retention.cutoff(days: 10, at: now)
            let keptLicenses = (0..<240).filter { now.addingTimeInterval(-Double($0) * 21_600) >= auditCutoff }.count
            let keptEvents = (0..<480).filter { now.addingTimeInterval(-Double($0) * 10_800) >= eventCutoff }.count
            #expect(deleted["satchel_licenses"] == 240 - keptLicenses && deleted["backplane_events"] == 480 - keptEvents, "\(deleted)")
            let after = try await rollupsAndRaw(sql, audit: audit)
            #expect(after.raw.values.reduce(0, +) == keptLicenses + keptEvents, "the rest intact")
            #expect(after.rollups == after.raw, "the roll-ups still equal the raw counts")
            if sql.dialect.name == "postgresql" {
                // Whole months past the cutoff are dropped partitions; the cutoff's own month stays (swept by rows).
                for (history, cutoff) in [(LicensingQueries.licenseHistory, auditCutoff), (LicensingQueries.syncHistory, auditCutoff), (FluentEventStore.history, eventCutoff)] {
                    let partitioned = try await MonthlyPartitions.isPartitioned(history, on: sql)
                    #expect(partitioned, "\(history.name) is partitioned by month")
                    let months = try await MonthlyPartitions.months(history, on: sql)
                    #expect(months.allSatisfy { $0.end > cutoff } && months.contains(MonthlyPartitions.Month(of: cutoff)), "\(history.name): \(months)")
                    #expect(months.contains(MonthlyPartitions.Month(of: now).adding(MonthlyPartitions.monthsAhead)), "the months ahead are made")
                }
            }
            let oldest = try await audit.raw("SELECT MIN(issued_at) AS t FROM satchel_licenses").first()?.decode(column: "t", as: Date.self)
            #expect(oldest.map { $0 >= auditCutoff } == true)
            #expect(try await retention.sweep(at: now, audit: audit, events: sql).values.allSatisfy { $0 == 0 }, "a second sweep finds nothing")
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }

    @Test("two nodes opening a new PostgreSQL database at once both migrate it (the history partitioned once)", .enabled(if: postgres != nil))
    func concurrentMigration() async throws {
        let reset = try await LicensingDatabase(dataDirectory: NSTemporaryDirectory(), url: Self.postgres, more: BackplaneMigrations.all)
        do {
            try await reset.sql().raw("DROP SCHEMA public CASCADE").run()
            try await reset.sql().raw("CREATE SCHEMA public").run()
        } catch {
            await reset.shutdown()
            throw error
        }
        await reset.shutdown()
        let results = await withTaskGroup(of: Result<LicensingDatabase, any Error>.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    do { return .success(try await LicensingDatabase(dataDirectory: NSTemporaryDirectory(), url: Self.postgres, more: BackplaneMigrations.all)) } catch { return .failure(error) }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let opened = results.compactMap { try? $0.get() }
        #expect(opened.count == 3, "every node opens: \(results.compactMap { if case .failure(let error) = $0 { String(describing: error).prefix(200) } else { nil } })")
        guard !opened.isEmpty else { return }
        do {
            let sql = try opened[0].sql()
            for history in [LicensingQueries.licenseHistory, LicensingQueries.syncHistory, FluentEventStore.history] {
                let partitioned = try await MonthlyPartitions.isPartitioned(history, on: sql)
                #expect(partitioned, "\(history.name)")
            }
            let logged = try await sql.raw("SELECT COUNT(*) AS n, COUNT(DISTINCT name) AS d FROM _fluent_migrations").first()
            #expect(try logged?.decode(column: "n", as: Int.self) == logged?.decode(column: "d", as: Int.self), "each migration ran once")
        } catch {
            for database in opened { await database.shutdown() }
            throw error
        }
        for database in opened { await database.shutdown() }
    }

    @Test("a month made ahead takes the rows its default partition held; a device's time far ahead is kept as five minutes after receipt, one far behind as a year before it; each is deduplicated and the old one swept (PostgreSQL)", .enabled(if: postgres != nil))
    func defaultPartition() async throws {
        let database = try await LicensingDatabase(dataDirectory: NSTemporaryDirectory(), url: Self.postgres, more: BackplaneMigrations.all)
        do {
            let sql = try database.sql()
            for table in ["backplane_events", "satchel_rollups"] { try await sql.raw("DELETE FROM \(ident: table)").run() }
            let now = Date(timeIntervalSince1970: 1_800_000_000.5), history = FluentEventStore.history
            try await MonthlyPartitions.ensure(history, at: now, on: sql)
            let later = now.addingTimeInterval(200 * 86_400), ancient = Date(timeIntervalSince1970: 40_000_000)
            let laterMonth = MonthlyPartitions.Month(of: later)
            try await sql.raw("DROP TABLE IF EXISTS \(ident: laterMonth.partition(of: history.name))").run()
            #expect(!(try await MonthlyPartitions.months(history, on: sql)).contains(laterMonth), "the month is not made yet")
            let events = FluentEventStore(database: sql)
            let sent = [DeviceEvent(eventID: "clock-ahead-1", kind: .playStart, time: later), DeviceEvent(eventID: "clock-behind-1", kind: .playStart, time: ancient),
                        DeviceEvent(eventID: "clock-right-1", kind: .playStart, time: now)]
            #expect(try await events.record(sent, device: "phone", user: "alice", received: now) == 3)
            #expect(try await events.record(sent, device: "phone", user: "alice", received: now.addingTimeInterval(60)) == 0,
                    "sent again (its times clamped otherwise now): kept once")
            func count(_ table: String) async throws -> Int {
                try await sql.raw("SELECT COUNT(*) AS n FROM \(ident: table)").first()?.decode(column: "n", as: Int.self) ?? -1
            }
            let stored = try await events.events(EventQuery(), limit: 10)
            #expect(stored.first { $0.event.eventID == "clock-ahead-1" }?.event.time == now.addingTimeInterval(300))
            #expect(stored.first { $0.event.eventID == "clock-behind-1" }?.event.time == now.addingTimeInterval(-366 * 86_400))
            func waiting(_ id: String) async throws -> Int {
                try await sql.raw("SELECT COUNT(*) AS n FROM backplane_events_default WHERE record_id = \(bind: id)").first()?.decode(column: "n", as: Int.self) ?? -1
            }
            // A row of a month not made yet (written before clamping existed) waits in the default partition too.
            try await sql.raw("""
                INSERT INTO backplane_events (record_id, device_id, user_id, kind, at, received_at, ordinal)
                VALUES ('phone:old-row-1', 'phone', 'alice', 'play-start', \(bind: later), \(bind: now), 1)
                """).run()
            #expect(try await waiting("phone:old-row-1") == 1, "in the default partition")

            try await MonthlyPartitions.ensure(history, monthsAhead: 8, at: now, on: sql)
            #expect(try await MonthlyPartitions.months(history, on: sql).contains(laterMonth))
            #expect(try await count(laterMonth.partition(of: "backplane_events")) == 1, "the row moved into its month")
            let (moved, total) = (try await waiting("phone:old-row-1"), try await count("backplane_events"))
            #expect(moved == 0 && total == 4, "nothing lost")
            #expect(try await events.record(sent, device: "phone", user: "alice", received: now.addingTimeInterval(120)) == 0, "still kept once after the move")

            let deleted = try await HistoryRetention(auditDays: nil, eventDays: 10).sweep(at: now, audit: try database.auditSQL(), events: sql)
            let left = try await count("backplane_events_default")
            #expect(deleted["backplane_events"] == 1 && left == 0, "the old event is swept: \(deleted)")
            #expect(try await events.events(EventQuery(), page: ListingRequest()).items.map(\.event.eventID).sorted() == ["clock-ahead-1", "clock-right-1", "old-row-1"])
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }
}
