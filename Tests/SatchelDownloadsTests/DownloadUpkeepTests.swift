import FluentKit
import FluentSQLiteDriver
import Foundation
import Logging
import SatchelStorage
import SatchelTestSupport
import Testing
@testable import SatchelDownloads
@testable import SatchelStreams

@Suite("Download engine: fresh credentials, damaged records, upgrades")
struct DownloadUpkeepTests {
    static let late = "asset/video_0/segment_2.ts"

    @Test("a 401/403 raises authorizationRequired; updateURL with a fresh token and a moved URL resumes and keeps the bytes")
    func freshCredentials() async throws {
        let world = try await DownloadWorld.make("credentials")
        defer { world.origin.stop() }
        world.origin.require(header: "Authorization", value: "Bearer first")
        let manager = try await world.manager()
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a", options: DownloadOptions(headers: ["Authorization": "Bearer first"]))
        world.origin.inject(.status(403), on: Self.late, times: -1)
        _ = await manager.run()
        let blocked = try await manager.asset("a")
        #expect(blocked.state == .blocked, "\(blocked.state) \(String(describing: blocked.failure)) \(world.origin.log.map(\.path))")
        let asked = await log.events.filter { $0 == .authorizationRequired(assetID: "a", status: 403) }.count
        #expect(asked == 9, "once per failed attempt: \(asked)")
        let before = Set(DownloadWorld.files(under: world.assetDirectory("a")).filter { $0.hasSuffix(".ts") })  // complete files
        #expect(!before.isEmpty)

        // The token expires, and the CDN moves the asset: the application hands over both.
        world.origin.clearFaults()
        world.origin.require(header: "Authorization", value: "Bearer second")
        try FileManager.default.moveItem(at: world.site.appendingPathComponent("asset"), to: world.site.appendingPathComponent("moved"))
        let seen = world.origin.log.count
        try await manager.updateURL("a", url: world.origin.url("moved/master.m3u8?token=2"), headers: ["Authorization": "Bearer second"])
        let queued = try await manager.asset("a")
        #expect(queued.state == .queued && queued.retryCount == 0 && queued.url.hasSuffix("moved/master.m3u8?token=2"))
        #expect(await manager.run().allComplete)
        try world.expectMediaMatchesOrigin("a", originDirectory: "moved")
        let after = world.origin.log.dropFirst(seen).map(\.path)
        #expect(after.allSatisfy { $0.hasPrefix("moved/") }, "\(after)")
        #expect(!after.contains { path in before.contains { path == "moved/" + $0 } }, "a file downloaded before is not fetched again")
        await #expect(throws: DownloadError.notFound("nope")) { try await manager.updateURL("nope", url: world.origin.url("x.m3u8")) }
        await #expect(throws: DownloadError.self) { try await manager.updateURL("a", url: "ftp://example.com/a") }
        await manager.close()
    }

    @Test("rebasing moves file URLs under the old folder and replaces the old query; other hosts stay")
    func rebase() throws {
        let old = try #require(URL(string: "https://cdn.example/v1/show/master.m3u8?token=old"))
        let new = try #require(URL(string: "https://edge.example:8443/v2/show/master.m3u8?token=new"))
        #expect(DownloadPlan.rebase("https://cdn.example/v1/show/video/1.ts?token=old", from: old, to: new)
                    == "https://edge.example:8443/v2/show/video/1.ts?token=new")
        #expect(DownloadPlan.rebase("https://cdn.example/v1/show/video/1.ts", from: old, to: new) == "https://edge.example:8443/v2/show/video/1.ts")
        #expect(DownloadPlan.rebase("https://cdn.example/keys/1?k=other", from: old, to: new) == "https://edge.example:8443/keys/1?k=other")
        #expect(DownloadPlan.rebase("https://keys.example/v1/show/1.key", from: old, to: new) == "https://keys.example/v1/show/1.key")
    }

    /// Opens the engine's SQLite index directly, as another program (or a damaged disk) might.
    static func withDatabase(_ world: DownloadWorld, _ body: (any Database) async throws -> Void) async throws {
        let store = try await FluentStore.open(.sqlite(.file(world.dataDirectory + "/downloads.sqlite")), as: .sqlite, migrations: [],
                                               logger: Logger(label: "test"))
        do { try await body(store.database) } catch {
            await store.databases.shutdownAsync()
            throw error
        }
        await store.databases.shutdownAsync()
    }

    @Test("the repair walk reads the index a page at a time and sees every row once: 1,203 damaged records, over three pages")
    func walksInPages() async throws {
        let path = try TestMedia.temporaryDirectory("index-walk").appendingPathComponent("downloads.sqlite").path
        await (try await DownloadIndex(path: path)).close()  // its tables made
        let store = try await FluentStore.open(.sqlite(.file(path)), as: .sqlite, migrations: [], logger: Logger(label: "test"))
        let rows = (0..<1203).map { number -> AssetRow in
            let row = AssetRow(id: String(format: "asset-%05d", number))
            (row.position, row.state, row.paused) = (number, "queued", false)
            row.record = Data(#"{"id":"asset"}"#.utf8)
            return row
        }
        try await rows.create(on: store.database)
        await store.databases.shutdownAsync()
        let index = try await DownloadIndex(path: path)
        let damaged = try await index.damaged()
        #expect(damaged.count == 1203 && Set(damaged.map(\.id)).count == 1203, "each row once: \(damaged.count)")
        #expect(DownloadIndex.walkPage < 1203 / 2, "more than two pages")
        await index.close()
    }

    @Test("a read of the queue takes at most its limit of records, in queue order (100,000; a queue made longer by hand is read to there), while the count sees them all; a queue's limit is never set past it")
    func queueReadBounded() async throws {
        #expect(DownloadIndex.recordLimit == 100_000)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-read-limit-\(UUID().uuidString)/downloads.sqlite").path
        let index = try await DownloadIndex(path: path, readLimit: 2)
        for (position, id) in ["c", "a", "b"].enumerated() { try await index.save(QueuePolicyTests.asset(id, position: position)) }
        let read = try await index.all().map(\.id), count = try await index.count()
        #expect(read == ["c", "a"] && count == 3)
        await index.close()
    }

    @Test("a record that cannot be read is reported and listed as damaged; its files stay; it can be removed")
    func damaged() async throws {
        let world = try await DownloadWorld.make("damaged")
        defer { world.origin.stop() }
        var manager = try await world.manager()
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "good")
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "bad")
        #expect(await manager.run().allComplete)
        await manager.close()
        let files = DownloadWorld.files(under: world.assetDirectory("bad"))
        try await Self.withDatabase(world) { database in
            let row = try #require(try await AssetRow.find("bad", on: database))
            row.record = Data(#"{"id":"bad","state":"complete"}"#.utf8)
            try await row.save(on: database)
        }

        manager = try await world.manager()
        let log = await EventLog(manager)
        #expect(try await manager.assets().map(\.id) == ["good"])
        let damaged = try await manager.damagedAssets()
        #expect(damaged.map(\.id) == ["bad"] && damaged.first?.reason.contains("missing field") == true, "\(damaged)")
        _ = await manager.run()
        _ = await manager.run()
        let reports = await log.events.filter { if case .damaged(assetID: "bad", _) = $0 { return true } else { return false } }
        #expect(reports.count == 1, "reported once per engine")
        #expect(DownloadWorld.files(under: world.assetDirectory("bad")) == files, "the files stay")
        await #expect(throws: DownloadError.duplicateID("bad")) { try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "bad") }
        try await manager.remove("bad")
        #expect(try await manager.damagedAssets().isEmpty && !FileManager.default.fileExists(atPath: world.assetDirectory("bad").path))
        await manager.close()
    }

    @Test("a store of an earlier version (plans inline and in the plan table) is upgraded with begin/finish events; assets stay playable")
    func upgrade() async throws {
        let world = try await DownloadWorld.make("upgrade")
        defer { world.origin.stop() }
        var manager = try await world.manager()
        for id in ["inline", "tabled", "queued"] { try await manager.add(url: world.origin.url("asset/master.m3u8"), id: id) }
        try await manager.pause("queued")
        _ = await manager.run()
        let plans = try await (manager.asset("inline").plan, manager.asset("tabled").plan)
        await manager.close()
        // Rewrite two records the way earlier versions kept them, and take the plans out of the folders.
        try await Self.withDatabase(world) { database in
            let inline = try #require(try await AssetRow.find("inline", on: database))
            var asset = try JSONDecoder().decode(DownloadAsset.self, from: inline.record)
            asset.plan = plans.0
            inline.record = try JSONEncoder().encode(asset)
            try await inline.save(on: database)
            let tabled = PlanRow(id: "tabled")
            tabled.plan = try JSONEncoder().encode(plans.1)
            try await tabled.create(on: database)
        }
        for id in ["inline", "tabled"] { try FileManager.default.removeItem(at: world.assetDirectory(id).appendingPathComponent(".satchel")) }

        manager = try await world.manager()
        let log = await EventLog(manager)
        // Before the upgrade has run, downloaded assets play.
        for id in ["inline", "tabled"] { #expect(try await manager.localPath(id).hasSuffix("\(id)/master.m3u8")) }
        try await manager.resume("queued")
        #expect(await manager.run().allComplete, "a queued asset downloads normally")
        let events = await log.events
        let began = events.firstIndex(of: .dataStoreUpgradeBegan), finished = events.firstIndex(of: .dataStoreUpgradeFinished(upgraded: 2))
        #expect(began != nil && finished != nil && began! < finished!, "\(events.prefix(4))")
        for (id, plan) in [("inline", plans.0), ("tabled", plans.1)] {
            #expect(FileManager.default.fileExists(atPath: world.assetDirectory(id).appendingPathComponent(".satchel/plan.json").path))
            let asset = try await manager.asset(id)
            #expect(asset.plan == plan && asset.state == .complete)
        }
        await manager.close()
        try await Self.withDatabase(world) { database in
            let left = try await PlanRow.query(on: database).count()
            #expect(left == 0, "the plan table is emptied")
        }
        // A second engine finds nothing to upgrade.
        manager = try await world.manager()
        let quiet = await EventLog(manager)
        _ = await manager.run()
        #expect(!(await quiet.events).contains(.dataStoreUpgradeBegan))
        await manager.close()
    }

    @Test("a manifest write killed before its rename leaves a temporary file; the next write of that manifest removes it")
    func leftovers() async throws {
        let world = try await DownloadWorld.make("leftovers")
        defer { world.origin.stop() }
        let manager = try await world.manager()
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        try await manager.pause("a")
        _ = await manager.run()
        let folder = world.assetDirectory("a")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let stale = folder.appendingPathComponent(".master.m3u8.k1ll3d.tmp"), other = folder.appendingPathComponent(".notes.tmp")
        for file in [stale, other] { try Data("half".utf8).write(to: file) }
        try await manager.resume("a")
        #expect(await manager.run().allComplete)
        #expect(!FileManager.default.fileExists(atPath: stale.path), "the killed write's temporary file is gone")
        #expect(FileManager.default.fileExists(atPath: other.path), "files that are not its temporaries stay")
        await manager.close()
    }
}
