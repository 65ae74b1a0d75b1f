import Foundation
import Logging
import SatchelAgent
import SatchelBackplane
import SatchelDevice
import SatchelDownloads
import SatchelBytes
import SatchelTestSupport
import Testing

/// Feeds and subscriptions end to end (seed 003 "Subscriptions"; issue 36 §1): a real `satchel serve`, real
/// `satchel agent` and `satchel download` processes, a real origin.
@Suite(.serialized) struct SubscriptionCommandTests {
    typealias World = BackplaneCommandTests.World

    /// `download list --json`: by ID, the state, whether paused, and the feed.
    static func assets(_ directory: String) throws -> [String: (state: String, paused: Bool, feed: String?)] {
        Dictionary(uniqueKeysWithValues: try BackplaneCommandTests.listJSON(directory).compactMap { row in
            (row["id"] as? String).map { ($0, (row["state"] as? String ?? "", row["paused"] as? Bool ?? false, row["feed"] as? String)) }
        })
    }

    /// Adds `asset` (the origin's clip under another name) to `feed`, published on `day`.
    static func add(_ world: World, _ origin: TestOrigin, feed: String = "news", _ asset: String, day: String) throws {
        let added = try world.backplane(["feeds", "add-item", feed, "--asset-id", asset, "--url", origin.url("clip.mp4"),
                                         "--title", asset.capitalized, "--published", day])
        #expect(added.status == 0, "\(added.stderr)")
    }

    /// A server, an origin with a clip (on loopback: private origins allowed unless `allowPrivate` is false), and the feed
    /// `news`; `body` runs off the concurrency pool.
    static func withFeed(_ name: String, allowPrivate: Bool = true, _ body: @escaping @Sendable (World, TestOrigin) throws -> Void) async throws {
        let world = try await World(name)
        defer { world.server.stop() }
        let origin = try await BackplaneCommandTests.origin(world)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            #expect(try world.backplane(["feeds", "create", "news", "--title", "News"]).status == 0)
            if allowPrivate { #expect(try world.backplane(["settings", "set", "--allow-private-feed-origins", "true"]).status == 0) }
            try body(world, origin)
        }
    }

    @Test("a subscribed device's download run takes the feed's new items, newest first: a quota of 2 deletes the oldest to make room (autodelete), or defers the new item paused (no autodelete); an item added by hand to the feed counts; unsubscribed, nothing more comes; the notices are events the operator counts")
    func downloadRun() async throws {
        try await Self.withFeed("subscriptions-run") { world, origin in
            let device = try world.device("device")
            let unknown = try CLIRunner.run(["agent", "subscribe", "films", "--data-dir", device.directory])
            #expect(unknown.status != 0 && unknown.stderr.contains("no feed films"), "\(unknown.stderr)")
            let subscribed = try CLIRunner.run(["agent", "subscribe", "news", "--max-items", "2", "--data-dir", device.directory])
            #expect(subscribed.status == 0 && subscribed.stdout.contains("news\tat most 2, oldest reset\tapplied through item 0"), "\(subscribed.stdout) \(subscribed.stderr)")
            let subscribers = try world.backplane(["feeds", "subscribers", "news"])
            #expect(subscribers.stdout.contains(device.id + "\tat most 2"), "\(subscribers.stdout) \(subscribers.stderr)")

            try Self.add(world, origin, "monday", day: "2026-11-23")
            try Self.add(world, origin, "tuesday", day: "2026-11-24")
            var ran = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(ran.status == 0 && ran.stderr.contains("subscription: added tuesday") && ran.stderr.contains("subscription: added monday"), "\(ran.stderr)")
            var assets = try Self.assets(device.directory)
            #expect(assets["monday"]?.state == "complete" && assets["tuesday"]?.state == "complete" && assets["monday"]?.feed == "news")
            let order = try BackplaneCommandTests.listJSON(device.directory).compactMap { $0["id"] as? String }
            #expect(order == ["tuesday", "monday"], "newest first")

            // Full quota, autodelete: the oldest is reset to make room — seed 003: "deletes any downloaded files from
            // local storage and resets the objects properties and status back to a pre-download state".
            try Self.add(world, origin, "wednesday", day: "2026-11-25")
            ran = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(ran.status == 3 && ran.stderr.contains("subscription: reset monday to make room"), "monday waits, paused: \(ran.status) \(ran.stderr)")
            assets = try Self.assets(device.directory)
            #expect(Set(assets.keys) == ["monday", "tuesday", "wednesday"] && assets["wednesday"]?.state == "complete")
            #expect(assets["monday"]?.state == "queued" && assets["monday"]?.paused == true && assets["monday"]?.feed == "news", "back before its download")
            let monday = try #require(try BackplaneCommandTests.listJSON(device.directory).first { $0["id"] as? String == "monday" })
            #expect(monday["completedAt"] == nil && monday["failure"] == nil, "\(monday)")
            let left = (try? FileManager.default.contentsOfDirectory(atPath: device.directory + "/assets/monday")) ?? []
            #expect(left.allSatisfy { $0 == ".satchel" }, "its files are gone: \(left)")
            #expect(try CLIRunner.run(["download", "run", "--data-dir", device.directory]).stderr.contains("subscription:") == false, "nothing new: nothing done")
            #expect(try CLIRunner.run(["download", "remove", "monday", "--data-dir", device.directory]).status == 0)

            // Full quota, no autodelete: the new item is made but waits, paused (run exits 3: some wait).
            #expect(try CLIRunner.run(["agent", "subscribe", "news", "--max-items", "2", "--no-autodelete", "--data-dir", device.directory]).status == 0)
            try Self.add(world, origin, "thursday", day: "2026-11-26")
            ran = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(ran.status == 3 && ran.stderr.contains("subscription: deferred thursday"), "\(ran.status) \(ran.stderr)")
            assets = try Self.assets(device.directory)
            #expect(assets["thursday"]?.paused == true && assets["thursday"]?.state == "queued" && assets["tuesday"] != nil)
            #expect(try CLIRunner.run(["download", "remove", "thursday", "--data-dir", device.directory]).status == 0)

            // An item enqueued by hand as the feed's counts toward its quota: with it, the quota is full again.
            #expect(try CLIRunner.run(["download", "remove", "tuesday", "--data-dir", device.directory]).status == 0)
            let byHand = try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "special", "--feed", "news", "--data-dir", device.directory])
            #expect(byHand.status == 0, "\(byHand.stderr)")
            try Self.add(world, origin, "friday", day: "2026-11-27")
            ran = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(ran.stderr.contains("subscription: deferred friday"), "wednesday and special fill the quota: \(ran.stderr)")

            // Unsubscribed: later items do not come.
            let gone = try CLIRunner.run(["agent", "unsubscribe", "news", "--data-dir", device.directory])
            #expect(gone.status == 0 && gone.stdout.contains("unsubscribed from news"), "\(gone.stderr)")
            let twice = try CLIRunner.run(["agent", "unsubscribe", "news", "--data-dir", device.directory])
            #expect(twice.status != 0 && twice.stderr.contains("not subscribed to news"), "\(twice.stderr)")
            try Self.add(world, origin, "saturday", day: "2026-11-28")
            _ = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(try Self.assets(device.directory)["saturday"] == nil)

            // The notices, as events: added (monday, tuesday, wednesday), reset (monday), deferred (thursday, friday).
            let counts = try world.backplane(["events", "counts", "--by", "kind", "--json"])
            let array = try #require(try JSONSerialization.jsonObject(with: Data(counts.stdout.utf8)) as? [[String: Any]], "\(counts.stderr)")
            let byKind = Dictionary(uniqueKeysWithValues: array.compactMap { row in (row["kind"] as? String).map { ($0, row["count"] as? Int ?? 0) } })
            #expect(byKind["subscription-added"] == 3 && byKind["subscription-reset"] == 1 && byKind["subscription-deferred"] == 2, "\(byKind)")
            #expect((byKind["subscription-synced"] ?? 0) >= 4, "\(byKind)")
        }
    }

    @Test("a feed's items on loopback (by address, or by the name localhost) are not fetched while the operator's settings keep feeds to public addresses: skipped with the reason, the origin never asked; allowed, a later item downloads")
    func privateOrigins() async throws {
        try await Self.withFeed("subscriptions-private", allowPrivate: false) { world, origin in
            let device = try world.device("device")
            #expect(try CLIRunner.run(["agent", "subscribe", "news", "--data-dir", device.directory]).status == 0)
            try Self.add(world, origin, "numeric", day: "2026-11-23")
            let named = origin.url("clip.mp4").replacingOccurrences(of: "127.0.0.1", with: "localhost")
            #expect(try world.backplane(["feeds", "add-item", "news", "--asset-id", "named", "--url", named, "--published", "2026-11-24"]).status == 0)
            let ran = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            for asset in ["numeric", "named"] {
                #expect(ran.stderr.contains("subscription: skipped \(asset):") && ran.stderr.contains("is on a private address"), "\(ran.stderr)")
                #expect(try Self.assets(device.directory)[asset] == nil)
            }
            #expect(ran.stderr.contains("--allow-private-feed-origins true"), "the error says what to do: \(ran.stderr)")
            #expect(origin.log.isEmpty, "nothing was asked of the private origin: \(origin.log.map(\.path))")

            #expect(try world.backplane(["settings", "set", "--allow-private-feed-origins", "true"]).status == 0)
            try Self.add(world, origin, "allowed", day: "2026-11-25")
            let allowed = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            let state = try Self.assets(device.directory)["allowed"]?.state
            #expect(allowed.status == 0 && state == "complete", "\(allowed.stderr)")
        }
    }

    @Test("a forced sync lists the items published since a date — of the feeds followed, or of every feed — without downloading them")
    func forcedSync() async throws {
        try await Self.withFeed("subscriptions-forced") { world, origin in
            #expect(try world.backplane(["feeds", "create", "sports", "--title", "Sports"]).status == 0)
            let device = try world.device("device")
            try Self.add(world, origin, "old", day: "2026-10-01")
            try Self.add(world, origin, feed: "sports", "final", day: "2026-11-20")
            #expect(try CLIRunner.run(["agent", "subscribe", "news", "--data-dir", device.directory]).status == 0)
            let followed = try CLIRunner.run(["agent", "sync", "--feeds-since", "2026-09-01", "--data-dir", device.directory])
            #expect(followed.status == 0 && followed.stdout.contains("listed\tnews\told\t2026-10-01") && !followed.stdout.contains("final"),
                    "\(followed.stdout) \(followed.stderr)")
            let all = try CLIRunner.run(["agent", "sync", "--feeds-since", "2026-11-01", "--all-feeds", "--data-dir", device.directory, "--json"])
            let object = try #require(try JSONSerialization.jsonObject(with: Data(all.stdout.utf8)) as? [String: Any], "\(all.stdout) \(all.stderr)")
            #expect((object["listing"] as? [[String: Any]])?.compactMap { $0["assetID"] as? String } == ["final"])
            #expect(try Self.assets(device.directory)["final"] == nil, "listed, not downloaded")
            let lone = try CLIRunner.run(["agent", "sync", "--all-feeds", "--data-dir", device.directory])
            #expect(lone.status != 0 && lone.stderr.contains("--all-feeds goes with --feeds-since"), "\(lone.stderr)")
        }
    }

    @Test("a listening device downloads a feed's new item within seconds of its being added, without a download run")
    func listening() async throws {
        try await Self.withFeed("subscriptions-listen") { world, origin in
            let device = try world.device("device")
            #expect(try CLIRunner.run(["agent", "subscribe", "news", "--data-dir", device.directory]).status == 0)
            let listener = try LineReader(["agent", "listen", "--data-dir", device.directory])
            defer { listener.stop() }
            #expect(listener.wait(for: "listening: connected", seconds: 30), "\(listener.lines)")
            let added = Date()
            try Self.add(world, origin, "breaking", day: "2026-11-27")
            #expect(listener.wait(for: "subscription: added breaking", seconds: 15), "\(listener.lines)")
            let file = device.directory + "/assets/breaking/clip.mp4"
            let deadline = Date().addingTimeInterval(30)
            while !FileManager.default.fileExists(atPath: file), Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }  // blocking-ok: the scenario runs on a thread of its own (withFeed)
            #expect(FileManager.default.fileExists(atPath: file), "downloaded by the listening device")
            #expect(Date().timeIntervalSince(added) < 30)
            listener.stop()
            #expect(try Self.assets(device.directory)["breaking"]?.state == "complete")
        }
    }
}

/// The subscription sync as an app embeds it, against a real `satchel serve` and origin.
@Suite(.serialized) struct SubscriptionSyncTests {
    /// An app's data source: it knows the items the feed names by asset ID alone, and supplies their URL, title and
    /// metadata; `skip` is not for this app.
    struct AppSource: SubscriptionDataSource {
        let origin: TestOrigin

        func lookup(_ item: FeedItem) async throws -> SubscriptionDownload? {
            var found = item
            switch item.assetID {
            case "bare":
                found.url = origin.url("clip.mp4")
                found.title = "From the app"
                found.metadata = ["source": "app"]
            case "flaky": found.url = origin.url("flaky.mp4")
            case "skip": return nil
            default: break
            }
            return SubscriptionDownload(item: found)
        }
    }

    @Test("an app's data source supplies what the feed does not (an item known by its asset ID alone gets its URL, title and metadata); an item whose origin fails for now (503) is not told applied and comes again at the next sync, not in a loop; one the app skips is said")
    func dataSource() async throws {
        let world = try await BackplaneCommandTests.World("subscriptions-source")
        defer { world.server.stop() }
        let origin = try await BackplaneCommandTests.origin(world)
        defer { origin.stop() }
        let device = try await TestMedia.offloaded { () throws -> (directory: String, id: String, stderr: String) in
            #expect(try world.backplane(["feeds", "create", "news", "--title", "News"]).status == 0)
            #expect(try world.backplane(["settings", "set", "--allow-private-feed-origins", "true"]).status == 0, "the app's origin is on loopback")
            for asset in ["bare", "flaky", "skip"] {
                #expect(try world.backplane(["feeds", "add-item", "news", "--asset-id", asset]).status == 0, "an item without a URL")
            }
            return try world.device("device")
        }
        let agent = try await Agent(dataDirectory: device.directory, logger: Logger(label: "test"))
        let downloads = try await DownloadManager(configuration: DownloadManager.Configuration(dataDirectory: device.directory),
                                                  environment: DownloadEnvironment(network: FixedNetwork.unmetered))
        do {
            _ = try await agent.backplane.subscribe(SubscriptionRequest(feedID: "news"))
            _ = try await agent.backplane.sync()  // the settings: private origins allowed
            try FileManager.default.copyItem(at: origin.root.appendingPathComponent("clip.mp4"), to: origin.root.appendingPathComponent("flaky.mp4"))
            origin.inject(.status(503), on: "flaky.mp4", times: 10)  // failing for now, whatever the fetcher retries
            let sync = SubscriptionSync(agent: agent, downloads: downloads, dataSource: AppSource(origin: origin))
            let first = try await sync.run()
            #expect(first.added == ["bare"] && first.skipped["skip"] != nil && first.reset.isEmpty, "\(first)")
            #expect(try await agent.backplane.subscriptions().first?.applied == 1, "applied up to the item before the one that failed")
            let bare = try await downloads.asset("bare")
            #expect(bare.url == origin.url("clip.mp4") && bare.options.feed?.title == "From the app" && bare.options.feed?.metadata == ["source": "app"])

            origin.clearFaults()
            let second = try await sync.run()
            #expect(second.added == ["flaky"], "it came again: \(second)")
            #expect(try await agent.backplane.subscriptions().first?.applied == 3)
            #expect(try await sync.run().isEmpty, "nothing more")
            // Without a data source, an item with no URL is skipped with the reason, and told applied.
            _ = try await TestMedia.offloaded { try world.backplane(["feeds", "add-item", "news", "--asset-id", "nourl"]) }
            let plain = try await SubscriptionSync(agent: agent, downloads: downloads).run()
            #expect(plain.skipped["nourl"]?.contains("no http or https URL") == true, "\(plain)")
            #expect(try await agent.backplane.subscriptions().first?.applied == 4)
        } catch {
            await downloads.close()
            await agent.close()
            throw error
        }
        await downloads.close()
        await agent.close()
    }
}
