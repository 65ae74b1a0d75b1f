import FluentKit
import Foundation
import SQLKit
import SatchelBackplane
import SatchelBytes
import SatchelLicensing
import SatchelStorage
import Testing

/// A SQLite store keeps the devices' sync times in a file of their own, `satchel-sync-times.sqlite` (`SyncTimesTable`):
/// their writes, every few milliseconds while devices sync, never make the store's readers drop their page cache.
@Suite("Sync times' own file")
struct SyncTimesFileTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func device(_ id: String) -> BackplaneDevice {
        BackplaneDevice(deviceID: id, user: "alice", name: "phone", platform: "linux", downloadEnabled: false, registered: now)
    }

    static func sql(_ database: any Database) throws -> any SQLDatabase {
        guard let sql = database as? any SQLDatabase else { throw BackplaneError.storage("not SQL") }
        return sql
    }

    @Test("devices' syncs are written to the sync times' file, owner-only: the store's readers see no change to the store's file (its data version stays), and the devices read with their times")
    func writesLeaveTheStoreAlone() async throws {
        let directory = NSTemporaryDirectory() + "satchel-sync-file-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await LicensingDatabase(dataDirectory: directory, url: nil, more: BackplaneMigrations.all, files: [SyncTimesTable.file]).using { database in
            let store = FluentBackplaneStore(database: database.database, readers: database.readers, syncTimes: database.database(of: SyncTimesTable.file))
            for id in ["d1", "d2", "d3"] { _ = try await store.register(Self.device(id)) }
            // SQLite's data version, per connection: it changes when another connection has committed to the file.
            let reader = try Self.sql(database.readers.handles[0])
            func version() async throws -> Int { try await reader.raw("PRAGMA data_version").first()?.decode(column: "data_version", as: Int.self) ?? -1 }
            let before = try await version()
            for (index, id) in ["d1", "d2", "d3"].enumerated() {
                _ = try await store.syncView(device: id, after: 0, limit: 10, at: Self.now.addingTimeInterval(Double(index)))
            }
            try await store.flush()
            #expect(try await version() == before, "no commit to the store's file")
            let file = try Self.sql(database.database(of: SyncTimesTable.file))
            #expect(try await file.raw("SELECT COUNT(*) AS n FROM backplane_device_syncs").first()?.decode(column: "n", as: Int.self) == 3)
            #expect(try await database.sql().raw("SELECT COUNT(*) AS n FROM backplane_device_syncs").first()?.decode(column: "n", as: Int.self) == 0)
            #expect(try await store.devices(user: "alice", page: ListingRequest()).items.map(\.lastSync) == [0, 1, 2].map { Self.now.addingTimeInterval($0) })
            let mode = try FileManager.default.attributesOfItem(atPath: directory + "/" + SyncTimesTable.file.name)[.posixPermissions] as? Int
            #expect(mode == 0o600)
        }
    }

    @Test("an earlier store's sync times (in the devices' rows of satchel.sqlite) are in the sync times' file after it opens, and in no other place")
    func earlierStoreMoved() async throws {
        let directory = NSTemporaryDirectory() + "satchel-sync-file-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The store as an earlier Satchel left it: every migration before the move, a time in a device's row.
        try await LicensingDatabase(dataDirectory: directory, url: nil, more: Array(BackplaneMigrations.all.dropLast())).using { earlier in
            try await earlier.sql().raw("""
                INSERT INTO backplane_devices (device_id, user_id, name, platform, download_enabled, state, registered_at, next_sequence, last_sync)
                VALUES ('e1', 'alice', 'phone', 'linux', \(bind: false), 'active', \(bind: Self.now), 1, \(bind: Self.now))
                """).run()
        }
        for _ in 0..<2 {  // and opened again: the move is not made twice
            try await LicensingDatabase(dataDirectory: directory, url: nil, more: BackplaneMigrations.all, files: [SyncTimesTable.file]).using { database in
                let file = try Self.sql(database.database(of: SyncTimesTable.file))
                #expect(try await file.raw("SELECT last_sync FROM backplane_device_syncs WHERE device_id = 'e1'").first()?.decode(column: "last_sync", as: Date.self) == Self.now)
                #expect(try await database.sql().raw("SELECT COUNT(*) AS n FROM backplane_device_syncs").first()?.decode(column: "n", as: Int.self) == 0)
                let store = FluentBackplaneStore(database: database.database, readers: database.readers, syncTimes: database.database(of: SyncTimesTable.file))
                #expect(try await store.device(.device("e1")).lastSync == Self.now)
            }
        }
    }
}
