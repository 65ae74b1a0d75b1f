import FluentKit
import FluentPostgresDriver
import FluentSQLiteDriver
import Foundation
import Logging
import SQLKit
import SatchelBytes
import SatchelStorage
import SatchelTestSupport
import Testing
@testable import SatchelBackplane

/// The backplane's store on a real SQLite file and, when `SATCHEL_TEST_DATABASE_URL` names one (scripts/test starts
/// it), a real PostgreSQL — there also as two nodes (two connection pools) racing for one user's limits.
@Suite("Backplane store", .serialized)
struct BackplaneStoreTests {
    static let kinds = ["sqlite"] + (ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"] != nil ? ["postgres"] : [])
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// A fresh store of `kind` (PostgreSQL: the backplane's tables dropped and made again); `nodes` handles on it.
    static func stores(_ kind: String, nodes: Int = 1) async throws -> (stores: [FluentBackplaneStore], sql: any SQLDatabase, close: () async -> Void) {
        var opened: [FluentStore] = []
        let configuration: DatabaseConfigurationFactory
        let id: DatabaseID
        if kind == "postgres", let url = ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"] {
            (configuration, id) = (try .postgres(url: url), .psql)
        } else {
            let folder = try TestMedia.temporaryDirectory("backplane")
            (configuration, id) = (.sqlite(.file(folder.appendingPathComponent("backplane.sqlite").path)), .sqlite)
        }
        // SQLite as the server opens it: its reads (a sync, the listings) through reader connections beside the writer.
        let sqlite = kind == "postgres" ? nil : SQLiteSettings(durability: .processCrash, large: true)
        for _ in 0..<(kind == "postgres" ? nodes : 1) {
            opened.append(try await FluentStore.open(configuration, as: id, migrations: [], sqlite: sqlite, logger: Logger(label: "test")))
        }
        let close: () async -> Void = { [opened] in for store in opened { await store.shutdown() } }
        do {
            guard let sql = opened[0].database as? any SQLDatabase else { throw BackplaneError.storage("not SQL") }
            for table in ["backplane_device_syncs", "backplane_subscriptions", "backplane_feed_items", "backplane_feeds", "backplane_events", "backplane_slots", "backplane_documents", "backplane_commands", "backplane_grants", "backplane_devices", "backplane_users"] {
                try await sql.raw("DROP TABLE IF EXISTS \(ident: table)").run()
            }
            for migration in BackplaneMigrations.all { try await migration.prepare(on: opened[0].database).get() }
            return (opened.map { FluentBackplaneStore(database: $0.database, readers: $0.readers) }, sql, close)
        } catch {
            await close()
            throw error
        }
    }

    /// Runs `body` on fresh stores and closes them whatever happens (a pool left open traps when it is freed).
    static func using(_ kind: String, nodes: Int = 1, _ body: ([FluentBackplaneStore], any SQLDatabase) async throws -> Void) async throws {
        let (stores, sql, close) = try await Self.stores(kind, nodes: nodes)
        do {
            try await body(stores, sql)
        } catch {
            await close()
            throw error
        }
        await close()
    }

    static func device(_ id: String, user: String = "alice", external: String? = nil) -> BackplaneDevice {
        BackplaneDevice(deviceID: id, user: user, externalID: external, name: "Device \(id)", platform: "linux", downloadEnabled: false, registered: now)
    }

    @Test("registration follows the user's limit (a per-user limit set before any device; devices past it disabled with the notice); a device registered again keeps its toggle and is told so; the toggle goes on only within the limit", arguments: kinds)
    func registration(kind: String) async throws {
        try await Self.using(kind) { (stores, sql) async throws in
            let store = stores[0]
            try await store.setLimits(BackplaneLimits(maxDevices: 5), user: nil)
            try await store.setLimits(BackplaneLimits(maxDevices: 2), user: "alice")
            let first = try await store.register(Self.device("a1", external: "tv-1"))
            let second = try await store.register(Self.device("a2"))
            let third = try await store.register(Self.device("a3"))
            #expect(first.device.downloadEnabled && second.device.downloadEnabled && first.notice == nil)
            #expect(!third.device.downloadEnabled && third.notice == .deviceLimitReached)
            let again = try await store.register(Self.device("a3"))
            #expect(!again.device.downloadEnabled && again.notice == .alreadyRegistered)
            #expect(try await store.register(Self.device("b1", user: "bob")).device.downloadEnabled, "bob has the global limit")
            await #expect(throws: BackplaneError.deviceLimitReached(user: "alice", limit: 2)) { try await store.setDownloadEnabled(.device("a3"), true, at: Self.now) }
            #expect(try await store.setDownloadEnabled(.external("tv-1"), false, at: Self.now).downloadEnabled == false)
            #expect(try await store.setDownloadEnabled(.device("a3"), true, at: Self.now).downloadEnabled)
            // The flag is a boolean column an operator can count.
            let rows = try await sql.raw("SELECT COUNT(*) AS n FROM backplane_devices WHERE user_id = 'alice' AND download_enabled").all()
            #expect(try rows.first?.decode(column: "n", as: Int.self) == 2)
            // Each change of the toggle is a command to the device, in order.
            #expect(try await store.pending(device: "a1", after: 0, limit: 10).map(\.action) == [.downloadEnabled(false)])
            #expect(try await store.devices(user: "alice", page: ListingRequest(limit: 10)).items.map(\.deviceID) == ["a1", "a2", "a3"])
            await #expect(throws: BackplaneError.unknownDevice("ext:nope")) { try await store.device(.external("nope")) }
            await #expect(throws: BackplaneError.externalIDTaken, "another device's external ID") { try await store.register(Self.device("a9", external: "tv-1")) }
            #expect(try await store.register(Self.device("a1", external: "tv-1")).notice == .alreadyRegistered, "its own again")
        }
    }

    @Test("permission: granted within the device's and the account's limits, granted again for the same asset, refused with the reason at each limit; a delete, a wipe or the device's own deletion gives the grants back", arguments: kinds)
    func permissions(kind: String) async throws {
        try await Self.using(kind) { (stores, _) async throws in
            let store = stores[0]
            try await store.setLimits(BackplaneLimits(maxAssetsPerDevice: 2, maxDownloads: 3), user: nil)
            _ = try await store.register(Self.device("d1"))
            _ = try await store.register(Self.device("d2"))
            #expect(try await store.permission(device: "d1", asset: "m1", downloadable: true) == .granted)
            #expect(try await store.permission(device: "d1", asset: "m1", downloadable: true) == .granted, "the same asset again")
            #expect(try await store.permission(device: "d1", asset: "m2", downloadable: true) == .granted)
            #expect(try await store.permission(device: "d1", asset: "m3", downloadable: true) == .refused(.deviceAssetLimit))
            #expect(try await store.permission(device: "d2", asset: "m3", downloadable: false) == .refused(.assetNotDownloadable))
            #expect(try await store.permission(device: "d2", asset: "m3", downloadable: true) == .granted)
            #expect(try await store.permission(device: "d2", asset: "m4", downloadable: true) == .refused(.accountDownloadLimit))
            let deleted = try await store.issue(.deleteAsset("m1"), to: .device("d1"), at: Self.now)
            #expect(deleted.sequence == 1)
            #expect(try await store.permission(device: "d2", asset: "m4", downloadable: true) == .granted, "the deleted asset's grant given back")
            _ = try await store.issue(.wipe, to: .device("d1"), at: Self.now)
            #expect(try await store.permission(device: "d1", asset: "m5", downloadable: true) == .granted)
            #expect(try await store.permission(device: "d1", asset: "m6", downloadable: true) == .refused(.accountDownloadLimit))
            try await store.release(device: "d1", asset: "m5")
            try await store.release(device: "d1", asset: "m5")
            #expect(try await store.permission(device: "d1", asset: "m6", downloadable: true) == .granted, "the device deleted m5 itself")
        }
    }

    @Test("commands: numbered per device in the order issued, pending until acknowledged (again changes nothing), after a cursor; a kill disables the device and refuses it from then on", arguments: kinds)
    func commands(kind: String) async throws {
        try await Self.using(kind) { (stores, _) async throws in
            let store = stores[0]
            _ = try await store.register(Self.device("k1", external: "phone-9"))
            let issued = [try await store.issue(.deleteAsset("x"), to: .device("k1"), at: Self.now),
                          try await store.issue(.settings(BackplaneSettings(expiryAfterPlay: 60)), to: .external("phone-9"), at: Self.now),
                          try await store.issue(.wipe, to: .device("k1"), at: Self.now)]
            #expect(issued.map(\.sequence) == [1, 2, 3])
            #expect(try await store.pending(device: "k1", after: 0, limit: 10) == issued)
            #expect(try await store.pending(device: "k1", after: 1, limit: 10) == Array(issued[1...]))
            #expect(try await store.acknowledgedThrough(device: "k1") == 0)
            try await store.acknowledge(device: "k1", command: issued[0].id)
            try await store.acknowledge(device: "k1", command: issued[0].id)
            #expect(try await store.pending(device: "k1", after: 0, limit: 10) == Array(issued[1...]))
            #expect(try await store.acknowledgedThrough(device: "k1") == 1)
            try await store.acknowledge(device: "k1", command: issued[2].id)
            #expect(try await store.acknowledgedThrough(device: "k1") == 1, "up to the first not acknowledged")
            try await store.acknowledge(device: "k1", command: issued[1].id)
            #expect(try await store.acknowledgedThrough(device: "k1") == 3, "all of them: the last issued")
            #expect(try await store.users(ListingRequest(limit: 10)).items == ["alice"])
            await #expect(throws: BackplaneError.unknownCommand("nope")) { try await store.acknowledge(device: "k1", command: "nope") }
            await #expect(throws: BackplaneError.badRequest("downloading is turned on or off through its own request (the limit applies)")) {
                try await store.issue(.downloadEnabled(true), to: .device("k1"), at: Self.now)
            }
            let kill = try await store.issue(.kill, to: .device("k1"), at: Self.now)
            let killed = try await store.device(.device("k1"))
            #expect(kill.sequence == 4 && killed.state == .killed && !killed.downloadEnabled)
            #expect(try await store.pending(device: "k1", after: 3, limit: 10).map(\.action) == [.kill], "the kill is still delivered")
            #expect(try await store.permission(device: "k1", asset: "y", downloadable: true) == .refused(.deviceKilled))
            await #expect(throws: BackplaneError.deviceKilled("k1")) { try await store.issue(.wipe, to: .device("k1"), at: Self.now) }
            await #expect(throws: BackplaneError.deviceKilled("k1")) { try await store.register(Self.device("k1")) }
            try await store.synced(device: "k1", at: Self.now)
            #expect(try await store.device(.device("k1")).lastSync == Self.now)
            let view = try await store.syncView(device: "k1", after: 3, limit: 10, at: Self.now.addingTimeInterval(60))
            #expect(view.commands == [kill] && view.acknowledged == 3 && view.state == .killed && !view.downloadEnabled, "the kill is still synced")
            #expect(try await store.device(.device("k1")).lastSync == Self.now, "a killed device's sync is not recorded")
            try await store.acknowledge(device: "k1", command: kill.id)
            await #expect(throws: BackplaneError.deviceKilled("k1"), "refused once it took its kill") {
                try await store.syncView(device: "k1", after: 0, limit: 10, at: Self.now)
            }
            _ = try await store.register(Self.device("k2"))
            let fresh = try await store.syncView(device: "k2", after: 0, limit: 10, at: Self.now)
            #expect(fresh.commands.isEmpty && fresh.acknowledged == 0 && fresh.state == .active)
            #expect(try await store.device(.device("k2")).lastSync == Self.now, "an active device's sync is recorded")
        }
    }

    @Test("a sync read while commands are issued (two at a time) and acknowledged: every answer lists commands in order, after its cursor and not acknowledged, its floor never moves back and never passes what is acknowledged; at the end all 60 were delivered once", arguments: kinds)
    func syncDuringIssue(kind: String) async throws {
        try await Self.using(kind) { (stores, _) async throws in
            let store = stores[0]
            _ = try await store.register(Self.device("busy"))
            let issuer = Task {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<60 {
                        if index >= 2 { try await group.next() }
                        group.addTask { _ = try await store.issue(.deleteAsset("a\(index)"), to: .device("busy"), at: Self.now) }
                    }
                    try await group.waitForAll()
                }
            }
            var applied: [Int64] = [], floor: Int64 = 0, after: Int64 = 0
            let deadline = ContinuousClock.now + .seconds(60)
            while applied.count < 60, ContinuousClock.now < deadline {
                let view = try await store.syncView(device: "busy", after: after, limit: 500, at: Self.now)
                let sequences = view.commands.map(\.sequence)
                #expect(sequences == sequences.sorted() && Set(sequences).count == sequences.count && sequences.allSatisfy { $0 > after }, "\(sequences) after \(after)")
                #expect(view.acknowledged >= floor && view.acknowledged <= (applied.last ?? 0), "floor \(view.acknowledged): was \(floor), acknowledged through \(applied.last ?? 0)")
                #expect(!sequences.contains { applied.contains($0) }, "an acknowledged command came again")
                floor = view.acknowledged
                for command in view.commands where command.sequence == (applied.last ?? 0) + 1 {
                    try await store.acknowledge(device: "busy", command: command.id)
                    applied.append(command.sequence)
                    after = command.sequence
                }
                if view.commands.isEmpty { try await Task.sleep(for: .milliseconds(1)) }
            }
            try await issuer.value
            #expect(applied == Array(1...60), "\(applied)")
            #expect(try await store.syncView(device: "busy", after: 60, limit: 500, at: Self.now).acknowledged == 60)
        }
    }

    @Test("settings: none at first; each change puts only the fields it sets over what is in force; a zero window is refused and changes nothing", arguments: kinds)
    func settings(kind: String) async throws {
        try await Self.using(kind) { (stores, _) async throws in
            let store = stores[0]
            #expect(try await store.settings() == BackplaneSettings())
            #expect(try await store.updateSettings(BackplaneSettings(expiryAfterDownload: 86_400, headroom: 1 << 30))
                    == BackplaneSettings(expiryAfterDownload: 86_400, headroom: 1 << 30))
            #expect(try await store.updateSettings(BackplaneSettings(expiryAfterPlay: 7_200))
                    == BackplaneSettings(expiryAfterDownload: 86_400, expiryAfterPlay: 7_200, headroom: 1 << 30))
            await #expect(throws: BackplaneError.self) { try await store.updateSettings(BackplaneSettings(expiryAfterDownload: 0)) }
            #expect(try await store.settings() == BackplaneSettings(expiryAfterDownload: 86_400, expiryAfterPlay: 7_200, headroom: 1 << 30))
        }
    }

    /// Requests in flight at once in the two-node race.
    static let inFlight = 8

    @Test("two nodes on one PostgreSQL: 200 concurrent registrations and 200 concurrent permission requests for one user, spread over both, never pass the limits (exact counts in the database)")
    func twoNodes() async throws {
        guard Self.kinds.contains("postgres") else { return }
        try await Self.using("postgres", nodes: 2) { (stores, sql) async throws in
            try await stores[0].setLimits(BackplaneLimits(maxDevices: 3, maxDownloads: 7), user: "carol")
            // 8 in flight at once: every pool's connections stay busy (they hold the user's row in turn), and none
            // waits past the pool's request timeout on a loaded machine.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<200 {
                    if index >= Self.inFlight { try await group.next() }
                    group.addTask { _ = try await stores[index % 2].register(Self.device("c\(index)", user: "carol")) }
                }
                try await group.waitForAll()
            }
            let enabled = try await sql.raw("SELECT COUNT(*) AS n FROM backplane_devices WHERE user_id = 'carol' AND download_enabled").all()
            #expect(try enabled.first?.decode(column: "n", as: Int.self) == 3)
            let devices = try await stores[1].devices(user: "carol", page: ListingRequest(limit: 1_000)).items.filter(\.downloadEnabled).map(\.deviceID)
            let answers = try await withThrowingTaskGroup(of: DownloadPermission.self) { group in
                var answers: [DownloadPermission] = []
                for index in 0..<200 {
                    if index >= Self.inFlight, let answer = try await group.next() { answers.append(answer) }
                    group.addTask { try await stores[index % 2].permission(device: devices[index % devices.count], asset: "a\(index)", downloadable: true) }
                }
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.filter(\.isGranted).count == 7)
            let grants = try await sql.raw("SELECT COUNT(*) AS n FROM backplane_grants WHERE user_id = 'carol'").all()
            #expect(try grants.first?.decode(column: "n", as: Int.self) == 7)
        }
    }
}
