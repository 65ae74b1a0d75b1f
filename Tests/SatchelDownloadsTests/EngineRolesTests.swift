import FluentKit
import FluentSQLiteDriver
import Foundation
import Logging
import SatchelBytes
import SatchelStorage
import SatchelTestSupport
import Testing
@testable import SatchelDownloads

/// The engine's roles, each made and driven alone — no `DownloadManager` — over a real SQLite index and a real
/// folder of files (issue 50 step 6: each role holds its own state and is testable alone).
@Suite("Download engine roles, each alone")
struct EngineRolesTests {
    /// A role's world: the index, the files and the shared parts a role is made with.
    struct World {
        let directory: URL
        let parts: EngineParts
        let reporter: EngineReporter
        let hub: DownloadEventHub
        let attempt = AttemptSlot()
        let usage: StorageUsage

        static func make(_ label: String) async throws -> World {
            let directory = try TestMedia.temporaryDirectory("roles-\(label)")
            let index = try await DownloadIndex(path: directory.appendingPathComponent("downloads.sqlite").path)
            let store = AssetStore(root: directory.appendingPathComponent("assets").path)
            var configuration = DownloadManager.Configuration(dataDirectory: directory.path)
            configuration.rules = DownloadRules(headroom: 0)
            let environment = DownloadEnvironment(network: FixedNetwork.unmetered)
            let parts = EngineParts(index: index, store: store, fetcher: ResourceFetcher(), steps: [], environment: environment,
                                    configuration: configuration)
            let hub = DownloadEventHub()
            return World(directory: directory, parts: parts, reporter: EngineReporter(sink: EventSink(hub: hub, logger: configuration.logger)),
                         hub: hub, usage: StorageUsage(store: store, environment: environment, rules: configuration.rules))
        }

        func queue(enabled: Bool = true) -> DownloadQueue {
            DownloadQueue(parts: parts, reporter: reporter, attempt: attempt, usage: usage, enabled: enabled)
        }

        /// An asset in the index with a file of `bytes` bytes on disk.
        func saveAsset(_ id: String, bytes: Int = 1000) async throws {
            let asset = QueuePolicyTests.asset(id, position: try await parts.index.nextPosition())
            try parts.store.writePlan(id, asset.plan)
            try Data(repeating: 7, count: bytes).write(to: URL(fileURLWithPath: parts.store.path(id, "f.mp4")))
            try await parts.index.save(asset)
        }

        func close() async {
            hub.finish()
            await parts.fetcher.shutdown()
            await parts.index.close()
        }
    }

    /// Collects what a stream of events says until the hub finishes.
    static func collect(_ events: AsyncStream<DownloadEvent>) -> Task<[DownloadEvent], Never> {
        Task {
            var seen: [DownloadEvent] = []
            for await event in events { seen.append(event) }
            return seen
        }
    }

    @Test("the attempt slot: a stop for another asset does nothing; a stop for its asset raises the stop and waits for the end; an older attempt's end leaves a newer one")
    func attemptSlot() async {
        let slot = AttemptSlot()
        await slot.stop()  // nothing in progress: returns at once
        let first = slot.begin("a")
        await slot.stop(ifItIs: "b")
        #expect(!first.stop.isRaised && slot.assetID == "a")
        let ender = Task {
            await first.stop.wait()
            first.ended.raise()
        }
        await slot.stop(ifItIs: "a")
        #expect(first.stop.isRaised && first.ended.isRaised)
        await ender.value
        let second = slot.begin("b")
        slot.end(first)
        #expect(slot.assetID == "b", "the first attempt's end does not clear the second")
        slot.end(second)
        #expect(slot.assetID == nil && second.ended.isRaised)
    }

    @Test("storage usage: scanned once, then counted; a budget's use is taken back; forgetting scans again; changed rules hold the next budget")
    func storageUsage() async throws {
        let world = try await World.make("usage")
        try await world.saveAsset("a", bytes: 1000)
        #expect(world.usage.current >= 1000)
        let scanned = world.usage.current
        try await world.saveAsset("b", bytes: 500)
        #expect(world.usage.current == scanned, "counted, not scanned again")
        let budget = world.usage.budget()
        try budget.reserve(200)
        world.usage.settle(budget)
        #expect(world.usage.current == scanned + 200)
        world.usage.forget()
        #expect(world.usage.current >= scanned + 500, "scanned again: \(world.usage.current)")
        world.usage.rules = DownloadRules(maxStorageAllowed: 10, headroom: 0)
        #expect(world.usage.rulesInForce.current.maxStorageAllowed == 10)
        #expect(throws: DownloadFailure.self) { try world.usage.budget().reserve(1) }
        await world.close()
    }

    @Test("an attempt's watch alone: every tick reports progress; a network the rules keep downloads off stops the attempt; every fourth tick notices a switch-off by another process")
    func attemptWatch() async throws {
        let world = try await World.make("watch")
        let seen = Self.collect(world.hub.events())
        try await world.saveAsset("a")
        let asset = try #require(try await world.parts.index.find("a"))
        let network = SettableNetwork(.unmetered)
        let watch = AttemptWatch(asset: asset, index: world.parts.index, network: network, rules: world.usage.rulesInForce, sink: world.reporter.sink,
                                 readyDuration: 0)
        let live = LiveProgress(scan: AssetStore.Scan(complete: [false], bytes: 10, sizes: [10]))
        try await world.parts.index.setSetting("enabled", "false")
        #expect(await watch.tick(live, number: 1), "the index is read only every fourth tick")
        #expect(await !watch.tick(live, number: 4) && watch.findings.switchedOff)
        try await world.parts.index.setSetting("enabled", "true")
        network.set(.cellular)
        #expect(await watch.tick(live, number: 5) == false)
        #expect(watch.findings.networkHold == .networkUnavailable(.cellular))
        world.usage.rules = DownloadRules(headroom: 0, downloadOverCellular: true)
        #expect(await watch.tick(live, number: 6), "the rules in force now allow it")
        await world.close()
        let progress = await seen.value.filter { if case .progress = $0 { true } else { false } }
        #expect(progress.count == 4)
    }

    @Test("the queue alone: the switch persists and reports the status; a pause stops the attempt at its asset and waits for its end; a removal deletes row and files and counts again")
    func queueAlone() async throws {
        let world = try await World.make("queue")
        let seen = Self.collect(world.hub.events())
        let queue = world.queue()
        try await world.saveAsset("a")
        try await world.saveAsset("b")

        try await queue.setEnabled(false)
        #expect(!queue.enabled && world.reporter.status == .disabled)
        #expect(try await world.parts.index.setting("enabled") == "false")
        try await queue.setEnabled(true)
        #expect(queue.enabled && queue.changed.isRaised, "switched on: the run loop is woken")
        queue.rearm()
        #expect(!queue.changed.isRaised)

        let control = world.attempt.begin("a")
        let ender = Task {
            await control.stop.wait()
            control.ended.raise()
        }
        try await queue.pause("a")
        await ender.value
        #expect(control.stop.isRaised && control.ended.isRaised)
        world.attempt.end(control)
        #expect(try await world.parts.index.isPaused("a") == true)

        let before = world.usage.current
        try await queue.remove("b")
        #expect(try await world.parts.index.find("b") == nil)
        #expect(!FileManager.default.fileExists(atPath: world.parts.store.path("b", "f.mp4")))
        #expect(world.usage.current < before, "counted again after the removal")
        #expect(!queue.isRemoving("b"))
        await #expect(throws: DownloadError.notFound("b")) { try await queue.remove("b") }

        await world.close()
        let events = await seen.value
        #expect(events.contains(.engineStatusChanged(.disabled)) && events.contains(.removed(assetID: "b")))
    }

    @Test("upkeep alone: a damaged record is reported once however often it is asked; fresh credentials requeue a blocked asset")
    func upkeepAlone() async throws {
        let world = try await World.make("upkeep")
        let seen = Self.collect(world.hub.events())
        try await world.saveAsset("good")
        var blocked = QueuePolicyTests.asset("blocked", position: 1, state: .blocked, retryCount: 6)
        blocked.failure = .httpStatus(url: "http://o/f.mp4", status: 403)
        try world.parts.store.writePlan("blocked", blocked.plan)
        try await world.parts.index.save(blocked)
        let store = try await FluentStore.open(.sqlite(.file(world.directory.appendingPathComponent("downloads.sqlite").path)), as: .sqlite,
                                               migrations: [], logger: Logger(label: "test"))
        let row = AssetRow(id: "bad")
        (row.position, row.state, row.paused) = (2, "queued", false)
        row.record = Data(#"{"id":"bad"}"#.utf8)
        try await row.create(on: store.database)
        await store.databases.shutdownAsync()

        let queue = world.queue()
        let reads = DownloadReads(parts: world.parts, reporter: world.reporter, queue: queue, attempt: world.attempt, usage: world.usage)
        let upkeep = DownloadUpkeep(parts: world.parts, reporter: world.reporter, queue: queue, reads: reads)
        try await upkeep.reportDamage()
        try await upkeep.reportDamage()
        try await upkeep.updateURL("blocked", url: "http://p/blocked", headers: nil)
        let requeued = try #require(try await world.parts.index.find("blocked"))
        #expect(requeued.state == .queued && requeued.retryCount == 0 && requeued.url == "http://p/blocked")
        #expect(queue.changed.isRaised, "the run loop is woken")
        try await upkeep.upgradeDataStore()
        #expect(upkeep.upgraded)

        await world.close()
        let events = await seen.value
        #expect(events.filter { if case .damaged(assetID: "bad", _) = $0 { true } else { false } }.count == 1, "\(events)")
        #expect(events.contains(.stateChanged(assetID: "blocked", state: .queued)))
    }
}
