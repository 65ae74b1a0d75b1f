import Foundation
import SatchelSystem
import SatchelDownloads
import SatchelTestSupport
import Testing

@Suite("Download engine: rules, windows, pause and the global switch")
struct DownloadRulesTests {
    @Test("headroom: checked before a download (nothing starts) and during one (it stops part-way, then resumes)")
    func headroom() async throws {
        let world = try await DownloadWorld.make("headroom")
        defer { world.origin.stop() }
        let free = Knob<Int64>(10 << 20)
        let calls = Knob(0)
        let environment = DownloadEnvironment(freeSpace: { _ in
            calls.value += 1
            return free.value
        }, network: FixedNetwork.unmetered)
        let manager = try await world.manager(rules: DownloadRules(headroom: 100 << 20), environment: environment, parallelism: 1)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        _ = await manager.run()
        var asset = try await manager.asset("a")
        #expect(asset.state == .waiting && asset.failure == .headroom(freeBytes: 10 << 20, headroom: 100 << 20))
        #expect(world.mediaBytes("a") == 0)

        // Plenty of space for a while, then not: the download stops with the typed reason, keeping what it has.
        free.value = 10 << 30
        calls.value = 0
        let watcher = Task {
            while calls.value < 12 { try await Task.sleep(for: .milliseconds(2)) }
            free.value = 10 << 20
        }
        _ = await manager.run()
        watcher.cancel()
        asset = try await manager.asset("a")
        let progress = try await manager.progress("a")
        #expect(asset.state == .waiting && asset.failure == .headroom(freeBytes: 10 << 20, headroom: 100 << 20))
        #expect(progress.bytes > 0 && progress.fraction < 1)
        #expect(progress.bytes == world.mediaBytes("a"), "reported progress is what is on disk")
        free.value = 10 << 30
        #expect(await manager.run().allComplete)
        try world.expectMediaMatchesOrigin("a")
        await manager.close()
    }

    @Test("maxStorageAllowed: the download stops before crossing it and resumes when the limit allows")
    func storageLimit() async throws {
        let world = try await DownloadWorld.make("storage")
        defer { world.origin.stop() }
        let manager = try await world.manager(rules: DownloadRules(maxStorageAllowed: 150_000, headroom: 0))
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        _ = await manager.run()
        let asset = try await manager.asset("a")
        guard case let .storageLimit(_, limit)? = asset.failure else { Issue.record("expected storageLimit, got \(String(describing: asset.failure))"); return }
        #expect(limit == 150_000 && asset.state == .waiting)
        #expect(world.mediaBytes("a") <= 150_000 && world.mediaBytes("a") > 0)
        #expect(try await manager.progress("a").bytes == world.mediaBytes("a"))
        await manager.setRules(DownloadRules(headroom: 0))
        #expect(await manager.run().allComplete)
        try world.expectMediaMatchesOrigin("a")
        await manager.close()
    }

    @Test("maxDownloadedAssets and downloadOverCellular hold assets until the rule allows them")
    func countAndCellular() async throws {
        let world = try await DownloadWorld.make("count")
        defer { world.origin.stop() }
        try await TestMedia.offloaded { try world.package("second", format: .hlsTS, scheme: .clear) }
        let network = SettableNetwork(.cellular)
        let manager = try await world.manager(rules: DownloadRules(maxDownloadedAssets: 1, headroom: 0),
                                              environment: DownloadEnvironment(network: network))
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "first")
        try await manager.add(url: world.origin.url("second/master.m3u8"), id: "second")
        _ = await manager.run()
        #expect(try await manager.asset("first").failure == .networkUnavailable(.cellular))
        #expect(world.origin.log.filter { $0.path.hasSuffix(".ts") }.isEmpty)
        await manager.setRules(DownloadRules(maxDownloadedAssets: 1, headroom: 0, downloadOverCellular: true))
        let summary = await manager.run()
        #expect(summary.states[.complete] == 1 && summary.states[.waiting] == 1)
        #expect(try await manager.asset("second").failure == .maxDownloadedAssets(1))
        try await manager.remove("first")
        #expect(!FileManager.default.fileExists(atPath: world.assetDirectory("first").path))
        network.set(.unmetered)
        #expect(await manager.run().allComplete)
        await manager.close()
    }

    @Test("availability windows: publish date hides, expiry date / after download / after play delete and report")
    func windows() async throws {
        let world = try await DownloadWorld.make("windows")
        defer { world.origin.stop() }
        let start = Date(timeIntervalSince1970: 2_000_000_000)
        let clock = ManualClock(start)
        let manager = try await world.manager(environment: DownloadEnvironment(clock: clock, network: FixedNetwork.unmetered))
        let log = await EventLog(manager)
        let url = world.origin.url("asset/master.m3u8")
        try await manager.add(url: url, id: "later", window: .init(publishDate: start.addingTimeInterval(3600)))
        try await manager.add(url: url, id: "dated", window: .init(expiryDate: start.addingTimeInterval(7200)))
        try await manager.add(url: url, id: "ead", window: .init(expiryAfterDownload: 600))
        try await manager.add(url: url, id: "eap", window: .init(expiryAfterPlay: 60))
        #expect(await manager.run().allComplete, "unpublished assets download anyway")
        #expect(try await manager.assets(availabilityFilter: true).map(\.id) == ["dated", "ead", "eap"])
        #expect(try await manager.assets(availabilityFilter: false).count == 4)
        await #expect(throws: DownloadError.notFound("later")) { try await manager.localPath("later") }

        clock.set(start.addingTimeInterval(601))  // EAD passes
        // Touching an expired item through the API deletes its files there and then (seed 003), with no run under way.
        #expect(try await manager.asset("ead").state == .expired)
        #expect(TestMedia.files(under: world.assetDirectory("ead")) == [".satchel/plan.json"], "expired files are deleted; the plan stays for the listing")
        #expect(await log.events.contains(.expiredAssetsReset(["ead"])))
        #expect(try await manager.assets(availabilityFilter: true).map(\.id) == ["dated", "eap"])
        #expect(try await manager.sweepExpired() == [], "already expired when it was touched")
        await #expect(throws: DownloadError.expired("ead")) { try await manager.localPath("ead") }
        await #expect(throws: DownloadError.expired("ead")) { try await manager.registerPlayStart("ead") }

        try await manager.registerPlayStart("eap")
        clock.set(start.addingTimeInterval(640))
        try await manager.registerPlayStart("eap")  // the first play counts, not the latest
        clock.set(start.addingTimeInterval(662))
        #expect(try await manager.sweepExpired() == ["eap"])

        clock.set(start.addingTimeInterval(7200))  // "later" is published, "dated" expires
        #expect(try await manager.assets(availabilityFilter: true).map(\.id) == ["later"])
        #expect(try await manager.localPath("later").hasSuffix("later/master.m3u8"))
        #expect(try await manager.asset("dated").state == .expired)
        #expect(await manager.run().states[.expired] == 3, "a run deletes what has expired")
        #expect(TestMedia.files(under: world.assetDirectory("dated")) == [".satchel/plan.json"])
        await manager.close()
    }

    @Test("start(): a background worker downloads what is added, resumed or let through by a rule, until stop()")
    func background() async throws {
        let world = try await DownloadWorld.make("background")
        defer { world.origin.stop() }
        try await TestMedia.offloaded { try world.package("second", format: .hlsTS, scheme: .clear) }
        let manager = try await world.manager(rules: DownloadRules(maxDownloadedAssets: 1, headroom: 0))
        let log = await EventLog(manager)
        await manager.start(recheckInterval: .seconds(60))
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        #expect(await log.waitUntil { $0 == .finished(assetID: "a") }, "finished in the background")
        try await manager.add(url: world.origin.url("second/master.m3u8"), id: "b")
        try await Task.sleep(for: .milliseconds(50))
        for _ in 0..<500 where try await manager.asset("b").state != .waiting { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try await manager.asset("b").failure == .maxDownloadedAssets(1))
        await manager.setRules(DownloadRules(maxDownloadedAssets: 2, headroom: 0))
        #expect(await log.waitUntil { $0 == .finished(assetID: "b") }, "finished in the background")
        // stop() ends a download in progress too, keeping what it has.
        world.origin.setThrottle(chunk: 4096, microseconds: 20_000)
        await manager.setRules(DownloadRules(maxDownloadedAssets: 3, headroom: 0))
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "c")
        #expect(await log.waitUntil { $0 == .started(assetID: "c") })
        let stopping = Date()
        await manager.stop()
        #expect(Date().timeIntervalSince(stopping) < 2)
        try await Task.sleep(for: .milliseconds(300))
        let stopped = try await manager.progress("c")
        #expect(try await manager.asset("c").state == .queued && stopped.fraction < 1, "nothing downloads after stop()")
        await manager.close()
    }

    @Test("an engine dropped without close() closes its index and HTTP client in the background")
    func droppedWithoutClose() async throws {
        let world = try await DownloadWorld.make("dropped")
        defer { world.origin.stop() }
        do {
            let manager = try await world.manager()
            try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        }
        try await Task.sleep(for: .milliseconds(300))
        let reopened = try await world.manager()
        #expect(try await reopened.assets().map(\.id) == ["a"])
        await reopened.close()
    }

    @Test("removing the asset being downloaded stops it, deletes its files, and nothing writes its row back")
    func removeWhileDownloading() async throws {
        let world = try await DownloadWorld.make("remove-live")
        defer { world.origin.stop() }
        world.origin.setThrottle(chunk: 4096, microseconds: 20_000)
        let manager = try await world.manager(parallelism: 2)
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        let running = Task { await manager.run() }
        #expect(await log.waitForBytes())
        try await manager.remove("a")
        let summary = await running.value
        #expect(summary.states.isEmpty)
        #expect(try await manager.assets().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: world.assetDirectory("a").path))
        await manager.close()
    }

    @Test("pause and resume one asset mid-download; the global switch persists across restarts; remove, flush, delete all")
    func pauseAndSwitch() async throws {
        let world = try await DownloadWorld.make("pause")
        defer { world.origin.stop() }
        try await TestMedia.offloaded { try world.package("second", format: .hlsTS, scheme: .clear) }
        world.origin.setThrottle(chunk: 2048, microseconds: 20_000)  // about 100 KB/s: still downloading when paused, however loaded the machine
        let manager = try await world.manager(parallelism: 2)
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        let running = Task { await manager.run() }
        #expect(await log.waitForBytes())
        try await manager.pause("a")
        _ = await running.value
        var asset = try await manager.asset("a")
        #expect(asset.isPaused && asset.state == .queued)
        let partial = try await manager.progress("a")
        #expect(partial.fraction < 1 && partial.bytes == world.mediaBytes("a"))
        _ = await manager.run()
        #expect(try await manager.progress("a").bytes == partial.bytes, "a paused asset does not download")
        world.origin.setThrottle(chunk: 1 << 20, microseconds: 0)
        try await manager.resume("a")
        #expect(await manager.run().allComplete)
        try world.expectMediaMatchesOrigin("a")

        // The global switch persists.
        try await manager.add(url: world.origin.url("second/master.m3u8"), id: "b")
        try await manager.setEnabled(false)
        await manager.close()
        let reopened = try await world.manager()
        #expect(await reopened.isEnabled == false)
        let summary = await reopened.run()
        #expect(!summary.enabled && summary.states[.queued] == 1)
        try await reopened.setEnabled(true)
        try await reopened.add(url: world.origin.url("asset/master.m3u8"), id: "c")
        try await reopened.pause("c")
        #expect(await reopened.run().states[.complete] == 2)

        // Flush removes what is not complete; delete all removes the rest.
        try await reopened.flush()
        #expect(try await reopened.assets().map(\.id) == ["a", "b"])
        #expect(!FileManager.default.fileExists(atPath: world.assetDirectory("c").path))
        try await reopened.deleteAll()
        #expect(try await reopened.assets().isEmpty)
        #expect(DownloadWorld.files(under: world.directory.appendingPathComponent("data/assets")).isEmpty)
        asset = try await reopened.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        #expect(asset.state == .queued)
        await reopened.close()
    }
}
