import FluentKit
import Foundation
import SQLKit
import SatchelBytes
import Testing
@testable import SatchelBackplane

/// Devices' sync times written together a moment after their syncs (`SyncTimes`): on a real SQLite file and, when
/// `SATCHEL_TEST_DATABASE_URL` names one, a real PostgreSQL (in the store's suite: one test at a time on its tables).
extension BackplaneStoreTests {
    /// The last sync written of `device`, read from the table itself (not through the store, which shows times not yet written).
    static func storedSync(_ device: String, _ sql: any SQLDatabase) async throws -> Date? {
        try await sql.raw("SELECT last_sync FROM backplane_device_syncs WHERE device_id = \(bind: device)").first()?.decode(column: "last_sync", as: Date?.self)
    }

    /// How many devices' sync times are written.
    static func writtenSyncs(_ sql: any SQLDatabase) async throws -> Int {
        try await sql.raw("SELECT COUNT(*) AS n FROM backplane_device_syncs").first()?.decode(column: "n", as: Int.self) ?? 0
    }

    @Test("a sync is answered before its time is written; the time reaches the table by itself within moments, and until then a read of the device shows it; PostgreSQL keeps room in the table's pages", arguments: Self.kinds)
    func writtenSoon(kind: String) async throws {
        try await Self.using(kind) { stores, sql in
            let store = stores[0]
            _ = try await store.register(Self.device("d1"))
            _ = try await store.syncView(device: "d1", after: 0, limit: 10, at: Self.now)
            #expect(try await store.device(.device("d1")).lastSync == Self.now)
            #expect(try await store.devices(user: "alice", page: ListingRequest()).items.map(\.lastSync) == [Self.now])
            let deadline = ContinuousClock.now + .seconds(10)
            while try await Self.storedSync("d1", sql) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            #expect(try await Self.storedSync("d1", sql) == Self.now, "written without a flush")
            if kind == "postgres" {  // room in each page for a row's next version (a heap-only update)
                let options = try await sql.raw("SELECT array_to_string(reloptions, ',') AS o FROM pg_class WHERE relname = 'backplane_device_syncs'").first()?
                    .decode(column: "o", as: String?.self)
                #expect(options == "fillfactor=85")
            }
        }
    }

    @Test("written along the way, many devices' times go in small statements spread over the interval: the table is seen with some of them written and the rest not yet", arguments: ["sqlite"])
    func spreadWrite(kind: String) async throws {
        try await Self.using(kind) { stores, sql in
            let ids = (0..<100).map { String(format: "s%04d", $0) }
            let rows: [SQLQueryString] = ids.map { "(\(bind: $0), 'alice', 'phone', 'linux', \(bind: false), 'active', \(bind: Self.now), 1)" }
            try await sql.raw("""
                INSERT INTO backplane_devices (device_id, user_id, name, platform, download_enabled, state, registered_at, next_sequence)
                VALUES \(rows.joined(separator: ", "))
                """).run()
            for id in ids { _ = try await stores[0].syncView(device: id, after: 0, limit: 10, at: Self.now) }
            // Four statements 10 ms apart: one statement for all (as before) would go from none written to all at once.
            var seen: Set<Int> = []
            let deadline = ContinuousClock.now + .seconds(10)
            while !seen.contains(ids.count), ContinuousClock.now < deadline {
                seen.insert(try await Self.writtenSyncs(sql))
                try await Task.sleep(for: .milliseconds(1))
            }
            #expect(seen.contains(ids.count), "every time written without a flush")
            #expect(seen.contains { $0 > 0 && $0 < ids.count }, "a part written before the rest: \(seen.sorted())")
        }
    }

    @Test("more devices than one statement writes: every one's time is written after a flush; a time never goes back, whichever node writes last", arguments: Self.kinds)
    func batchesAndOrder(kind: String) async throws {
        try await Self.using(kind, nodes: 2) { stores, sql in
            let ids = (0..<(SyncTimes.flushBatch * 2 + 10)).map { String(format: "n%04d", $0) }
            for start in stride(from: 0, to: ids.count, by: 200) {
                let rows: [SQLQueryString] = ids[start..<min(start + 200, ids.count)].map {
                    "(\(bind: $0), 'alice', 'phone', 'linux', \(bind: false), 'active', \(bind: Self.now), 1)"
                }
                try await sql.raw("""
                    INSERT INTO backplane_devices (device_id, user_id, name, platform, download_enabled, state, registered_at, next_sequence)
                    VALUES \(rows.joined(separator: ", "))
                    """).run()
            }
            for (index, id) in ids.enumerated() {
                _ = try await stores[0].syncView(device: id, after: 0, limit: 10, at: Self.now.addingTimeInterval(Double(index)))
            }
            try await stores[0].flush()
            #expect(try await Self.writtenSyncs(sql) == ids.count)
            #expect(try await Self.storedSync(ids[700], sql) == Self.now.addingTimeInterval(700))
            // Another node (or this one) notes an older sync of a device after a newer one was written: the row keeps the newer.
            let other = stores.count > 1 ? stores[1] : stores[0]
            _ = try await other.syncView(device: ids[0], after: 0, limit: 10, at: Self.now.addingTimeInterval(-60))
            try await other.flush()
            #expect(try await Self.storedSync(ids[0], sql) == Self.now)
            _ = try await stores[0].syncView(device: ids[1], after: 0, limit: 10, at: Self.now.addingTimeInterval(600))
            _ = try await other.syncView(device: ids[1], after: 0, limit: 10, at: Self.now.addingTimeInterval(300))
            try await stores[0].flush()
            try await other.flush()
            #expect(try await Self.storedSync(ids[1], sql) == Self.now.addingTimeInterval(600))
            try await other.synced(device: ids[1], at: Self.now.addingTimeInterval(100))
            #expect(try await Self.storedSync(ids[1], sql) == Self.now.addingTimeInterval(600), "recorded at once, never back either")
            try await other.synced(device: ids[1], at: Self.now.addingTimeInterval(900))
            #expect(try await Self.storedSync(ids[1], sql) == Self.now.addingTimeInterval(900))
        }
    }

    @Test("a write that fails keeps its times: once the table is back they are written, the later of two syncs of a device kept", arguments: ["sqlite"])
    func failedWriteKept(kind: String) async throws {
        try await Self.using(kind) { stores, sql in
            let store = stores[0]
            _ = try await store.register(Self.device("d1"))
            _ = try await store.register(Self.device("d2"))
            _ = try await store.syncView(device: "d1", after: 0, limit: 10, at: Self.now)
            _ = try await store.syncView(device: "d2", after: 0, limit: 10, at: Self.now)
            try await sql.raw("ALTER TABLE backplane_device_syncs RENAME TO backplane_device_syncs_away").run()
            await #expect(throws: BackplaneError.self) { try await store.flush() }
            try await sql.raw("ALTER TABLE backplane_device_syncs_away RENAME TO backplane_device_syncs").run()
            // The device reads as synced meanwhile; a later sync of d1 noted while the failed times wait.
            #expect(try await store.device(.device("d2")).lastSync == Self.now)
            _ = try await store.syncView(device: "d1", after: 0, limit: 10, at: Self.now.addingTimeInterval(5))
            try await store.flush()
            #expect(try await Self.storedSync("d1", sql) == Self.now.addingTimeInterval(5))
            #expect(try await Self.storedSync("d2", sql) == Self.now)
        }
    }

    @Test("an earlier store's sync times, kept in the devices' rows, move to their own table when it is migrated, and the column goes", arguments: Self.kinds)
    func movedFromTheRows(kind: String) async throws {
        try await Self.using(kind) { stores, sql in
            guard let database = sql as? any Database else { throw BackplaneError.storage("not a FluentKit database") }
            try await MoveSyncTimesToTheirTable().revert(on: database)  // the layout before: a time in each device's row
            try await sql.raw("""
                INSERT INTO backplane_devices (device_id, user_id, name, platform, download_enabled, state, registered_at, next_sequence, last_sync)
                VALUES ('m1', 'alice', 'phone', 'linux', \(bind: false), 'active', \(bind: Self.now), 1, \(bind: Self.now)),
                       ('m2', 'alice', 'phone', 'linux', \(bind: false), 'active', \(bind: Self.now), 1, NULL)
                """).run()
            try await MoveSyncTimesToTheirTable().prepare(on: database)
            #expect(try await Self.storedSync("m1", sql) == Self.now)
            #expect(try await Self.writtenSyncs(sql) == 1, "a device never synced has no row")
            #expect(try await stores[0].devices(user: "alice", page: ListingRequest()).items.map(\.lastSync) == [Self.now, nil])
            await #expect(throws: (any Error).self, "the column is gone") { try await sql.raw("SELECT last_sync FROM backplane_devices").run() }
        }
    }

    @Test("a forgotten device's sync time goes with it; a device registered again shows its last sync", arguments: Self.kinds)
    func forgottenWithTheDevice(kind: String) async throws {
        try await Self.using(kind) { stores, sql in
            let store = stores[0]
            _ = try await store.register(Self.device("f1"))
            try await store.synced(device: "f1", at: Self.now)
            #expect(try await store.register(Self.device("f1")).device.lastSync == Self.now)
            #expect(try await store.setDownloadEnabled(.device("f1"), false, at: Self.now).lastSync == Self.now)
            #expect(try await store.delete(.device("f1")).lastSync == Self.now)
            #expect(try await Self.storedSync("f1", sql) == nil)
            await #expect(throws: BackplaneError.self) { try await store.synced(device: "f1", at: Self.now) }
        }
    }

    @Test("noting keeps a device's latest time and refuses new devices past its bound; a write's times stay readable until it ends")
    func noting() {
        let times = SyncTimes()
        #expect(times.note("a", at: Self.now), "the first note schedules the write")
        #expect(!times.note("b", at: Self.now), "one write at a time")
        #expect(!times.note("a", at: Self.now.addingTimeInterval(-1)))
        #expect(times.unwritten("a") == Self.now, "an older time does not replace a newer")
        let taken = times.take()
        #expect(taken == ["a": Self.now, "b": Self.now])
        #expect(times.unwritten("a") == Self.now, "readable while written")
        _ = times.note("a", at: Self.now.addingTimeInterval(1))
        times.finished(taken, succeeded: true)
        #expect(times.unwritten("a") == Self.now.addingTimeInterval(1) && times.unwritten("b") == nil)
        #expect(times.continues(), "a time noted during the write: another write")
        times.finished(times.take(), succeeded: true)
        #expect(!times.continues(), "nothing left: the next note schedules")
        #expect(times.note("c", at: Self.now))
        let bounded = SyncTimes(limit: 2)
        _ = bounded.note("a", at: Self.now)
        _ = bounded.note("b", at: Self.now)
        _ = bounded.note("c", at: Self.now)
        _ = bounded.note("a", at: Self.now.addingTimeInterval(1))
        #expect(bounded.take() == ["a": Self.now.addingTimeInterval(1), "b": Self.now], "a third device waits for its next sync; a known one is updated")
    }

    @Test("a write's statements spread over most of the interval: 1 ms to 10 ms apart, none for a write of one statement")
    func spread() {
        #expect(SyncTimes.pause(statements: 1) == .zero && SyncTimes.pause(statements: 0) == .zero)
        #expect(SyncTimes.pause(statements: 2) == .milliseconds(10), "a few statements: 10 ms apart")
        // 1,200 devices, 48 statements: 47 pauses over 80 % of the interval.
        let pause = SyncTimes.pause(statements: 48)
        #expect(pause > .milliseconds(4) && pause < .milliseconds(4.5) && pause * 47 <= SyncTimes.interval, "\(pause)")
        #expect(SyncTimes.pause(statements: 10_000) == .milliseconds(1), "a write longer than the interval: the next waits")
    }
}
