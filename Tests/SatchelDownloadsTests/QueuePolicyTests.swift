import Foundation
import SatchelRights
import Testing
@testable import SatchelDownloads
@testable import SatchelStreams

/// The queue's rules as values: no files, no network, no database.
@Suite("Queue policy: order, rule holds, windows, the Rule of Threes")
struct QueuePolicyTests {
    static let now = Date(timeIntervalSince1970: 1_900_000_000)

    static func asset(_ id: String, position: Int, state: DownloadState = .queued, paused: Bool = false, retryCount: Int = 0,
                      window: AvailabilityWindow = AvailabilityWindow(), completedAt: Date? = nil) -> DownloadAsset {
        let plan = DownloadPlan(format: .file, mainPath: "f.mp4", manifests: [],
                                resources: [DownloadResource(url: "http://o/f.mp4", localPath: "f.mp4", kind: .file)], totalDuration: nil)
        return DownloadAsset(id: id, url: "http://o/\(id)", state: state, isPaused: paused, failure: nil, retryCount: retryCount, window: window,
                             options: DownloadOptions(), plan: plan, addedAt: now, completedAt: completedAt, firstPlayAt: nil, position: position)
    }

    static func environment(network: NetworkType = .unmetered, free: Int64? = 1 << 40, used: Int64 = 0) -> QueueEnvironment {
        QueueEnvironment(network: network, freeSpace: free, usedBytes: used, now: now)
    }

    @Test("the first downloadable asset in queue order goes next; paused, complete, blocked, expired and visited ones are skipped")
    func order() {
        let policy = QueuePolicy(rules: DownloadRules(headroom: 0))
        let queue = [Self.asset("c", position: 3), Self.asset("paused", position: 0, paused: true), Self.asset("done", position: 1, state: .complete),
                     Self.asset("blocked", position: 2, state: .blocked), Self.asset("b", position: 4, state: .waiting),
                     Self.asset("gone", position: -1, state: .expired)]
        #expect(policy.next(queue: queue, environment: Self.environment(), visited: []) == .download("c"))
        #expect(policy.next(queue: queue, environment: Self.environment(), visited: ["c"]) == .download("b"))
        #expect(policy.next(queue: queue, environment: Self.environment(), visited: ["c", "b"]) == .endOfPass)
        #expect(policy.next(queue: [], environment: Self.environment(), visited: []) == .endOfPass)
    }

    @Test("rules hold an asset: no network, cellular without permission, the asset count, maxStorageAllowed, headroom")
    func holds() {
        let queue = [Self.asset("a", position: 0), Self.asset("done", position: 1, state: .complete)]
        let open = QueuePolicy(rules: DownloadRules(headroom: 0))
        #expect(open.next(queue: queue, environment: Self.environment(network: .none), visited: []) == .hold("a", .networkUnavailable(.none)))
        #expect(open.next(queue: queue, environment: Self.environment(network: .cellular), visited: []) == .hold("a", .networkUnavailable(.cellular)))
        let cellular = QueuePolicy(rules: DownloadRules(headroom: 0, downloadOverCellular: true))
        #expect(cellular.next(queue: queue, environment: Self.environment(network: .cellular), visited: []) == .download("a"))
        let one = QueuePolicy(rules: DownloadRules(maxDownloadedAssets: 1, headroom: 0))
        #expect(one.next(queue: queue, environment: Self.environment(), visited: []) == .hold("a", .maxDownloadedAssets(1)))
        let small = QueuePolicy(rules: DownloadRules(maxStorageAllowed: 100, headroom: 0))
        #expect(small.next(queue: queue, environment: Self.environment(used: 100), visited: []) == .hold("a", .storageLimit(usedBytes: 100, limit: 100)))
        #expect(small.next(queue: queue, environment: Self.environment(used: 99), visited: []) == .download("a"))
        let roomy = QueuePolicy(rules: DownloadRules(headroom: 1000))
        #expect(roomy.next(queue: queue, environment: Self.environment(free: 999), visited: []) == .hold("a", .headroom(freeBytes: 999, headroom: 1000)))
        #expect(roomy.next(queue: queue, environment: Self.environment(free: nil), visited: []) == .download("a"), "unknown free space holds nothing")
    }

    @Test("windows: an asset past its expiry date, or its time after download, expires before anything is downloaded; reading shows it expired")
    func windows() {
        let policy = QueuePolicy(rules: DownloadRules(headroom: 0))
        let dated = Self.asset("dated", position: 1, state: .complete, window: .init(expiryDate: Self.now))
        let ead = Self.asset("ead", position: 2, state: .complete, window: .init(expiryAfterDownload: 60), completedAt: Self.now.addingTimeInterval(-61))
        let fresh = Self.asset("fresh", position: 3, state: .complete, window: .init(expiryAfterDownload: 60), completedAt: Self.now.addingTimeInterval(-59))
        let queued = Self.asset("q", position: 0)
        #expect(policy.next(queue: [queued, dated, ead, fresh], environment: Self.environment(), visited: []) == .expire(["dated", "ead"]))
        #expect(QueuePolicy.presented(ead, at: Self.now).state == .expired)
        #expect(QueuePolicy.presented(fresh, at: Self.now).state == .complete)
        #expect(!QueuePolicy.hasExpired(Self.asset("x", position: 0, state: .expired, window: .init(expiryDate: Self.now)), at: Self.now))
    }

    @Test("a window is rights: publish → in-future, expiry date end-exclusive, expiry after download only once complete, expiry after play from first play; old fractional durations decode")
    func windowAsRights() throws {
        let now = Self.now
        let window = AvailabilityWindow(publishDate: now.addingTimeInterval(10), expiryDate: now.addingTimeInterval(1000),
                                        expiryAfterDownload: 300, expiryAfterPlay: 60)
        #expect(window.rights == Rights(start: now.addingTimeInterval(10), end: now.addingTimeInterval(1000), validitySeconds: 300,
                                        playbackSeconds: 60, persistent: true))
        #expect(window.evaluate(completedAt: nil, firstPlayAt: nil, at: now).status == .inFuture)
        #expect(window.evaluate(completedAt: nil, firstPlayAt: nil, at: now.addingTimeInterval(10)).status == .valid)
        // Not complete: the time after download has not started, however long ago the asset was added.
        #expect(window.evaluate(completedAt: nil, firstPlayAt: nil, at: now.addingTimeInterval(999)).status == .valid)
        #expect(window.evaluate(completedAt: nil, firstPlayAt: nil, at: now.addingTimeInterval(1000)).status == .expired)
        let done = now.addingTimeInterval(20)
        #expect(window.evaluate(completedAt: done, firstPlayAt: nil, at: done.addingTimeInterval(299)).status == .valid)
        #expect(window.evaluate(completedAt: done, firstPlayAt: nil, at: done.addingTimeInterval(300)).status == .expired)
        let played = window.evaluate(completedAt: done, firstPlayAt: done.addingTimeInterval(100), at: done.addingTimeInterval(150))
        #expect(played.status == .valid && played.end == done.addingTimeInterval(160) && !played.expireAfterFirstUse)
        #expect(window.evaluate(completedAt: done, firstPlayAt: nil, at: done).expireAfterFirstUse)
        #expect(window.expiry(completedAt: done, firstPlayAt: nil) == done.addingTimeInterval(300))
        let stored = #"{"expiryAfterDownload": 59.2, "expiryAfterPlay": 60}"#
        let decoded = try JSONDecoder().decode(AvailabilityWindow.self, from: Data(stored.utf8))
        #expect(decoded == AvailabilityWindow(expiryAfterDownload: 60, expiryAfterPlay: 60))
    }

    @Test("the Rule of Threes: three attempts per pass, a pass counted on the third failure, blocked after three passes")
    func ruleOfThrees() {
        let failure = DownloadFailure.network(url: "http://o/f", message: "reset")
        #expect(QueuePolicy.outcome(of: nil, attempt: 1, retryCount: 0) == .complete)
        #expect(QueuePolicy.outcome(of: failure, attempt: 1, retryCount: 0) == .retry(failure))
        #expect(QueuePolicy.outcome(of: failure, attempt: 2, retryCount: 0) == .retry(failure))
        #expect(QueuePolicy.outcome(of: failure, attempt: 3, retryCount: 0) == .endPass(failure, blocked: false))
        #expect(QueuePolicy.outcome(of: failure, attempt: 3, retryCount: 1) == .endPass(failure, blocked: false))
        #expect(QueuePolicy.outcome(of: failure, attempt: 3, retryCount: 2) == .endPass(failure, blocked: true))
        #expect(QueuePolicy.outcome(of: .cancelled, attempt: 3, retryCount: 2) == .stopped)
        #expect(QueuePolicy.outcome(of: .headroom(freeBytes: 1, headroom: 2), attempt: 1, retryCount: 0) == .wait(.headroom(freeBytes: 1, headroom: 2)))
        let fatal = DownloadFailure.mimeType(url: "http://o/f", mimeType: "text/html")
        #expect(QueuePolicy.outcome(of: fatal, attempt: 1, retryCount: 0) == .block(fatal))

        var asset = Self.asset("a", position: 0)
        asset = QueuePolicy.apply(.endPass(failure, blocked: false), to: asset, now: Self.now)
        #expect(asset.state == .queued && asset.retryCount == 1 && asset.failure == failure)
        #expect(QueuePolicy.wantsAnotherPass(.endPass(failure, blocked: false)))
        asset = QueuePolicy.apply(.endPass(failure, blocked: true), to: asset, now: Self.now)
        #expect(asset.state == .blocked && asset.retryCount == 2)
        #expect(!QueuePolicy.wantsAnotherPass(.endPass(failure, blocked: true)))
        let done = QueuePolicy.apply(.complete, to: Self.asset("b", position: 0), now: Self.now)
        #expect(done.state == .complete && done.completedAt == Self.now && done.failure == nil)
        #expect(QueuePolicy.apply(.wait(.maxDownloadedAssets(1)), to: done, now: Self.now).state == .waiting)
    }

    @Test("an asset not started must fit whole: its planned size under maxStorageAllowed and the headroom, else it waits with does-not-fit; one whose size is unknown, or already started, is not held by it")
    func wholeItemFits() {
        var sized = Self.asset("big", position: 0)
        sized.plan.resources[0].expectedSize = 1000
        let queue = [sized]
        let roomy = QueuePolicy(rules: DownloadRules(maxStorageAllowed: 2000, headroom: 0))
        #expect(roomy.next(queue: queue, environment: Self.environment(used: 1000), visited: []) == .download("big"), "1000 + 1000 fits under 2000")
        #expect(roomy.next(queue: queue, environment: Self.environment(used: 1001), visited: []) == .hold("big", .doesNotFit(neededBytes: 1000, availableBytes: 999)))
        let tight = QueuePolicy(rules: DownloadRules(headroom: 600))
        #expect(tight.next(queue: queue, environment: Self.environment(free: 1500), visited: []) == .hold("big", .doesNotFit(neededBytes: 1000, availableBytes: 900)))
        #expect(tight.next(queue: queue, environment: Self.environment(free: 1600), visited: []) == .download("big"))
        #expect(DownloadFailure.doesNotFit(neededBytes: 1, availableBytes: 0).isRuleLimit, "it waits; no error is counted")
        var started = sized
        started.state = .downloading
        #expect(roomy.next(queue: [started], environment: Self.environment(used: 1500), visited: []) == .download("big"), "its bytes are partly counted already")
        #expect(roomy.next(queue: [Self.asset("unknown", position: 0)], environment: Self.environment(used: 1999), visited: []) == .download("unknown"))
        var light = Self.asset("light", position: 0)  // as the index hands it: the size kept beside a light plan
        light.plannedBytes = 1000
        #expect(roomy.next(queue: [light], environment: Self.environment(used: 1500), visited: []) == .hold("light", .doesNotFit(neededBytes: 1000, availableBytes: 500)))
    }

    @Test("seed 003 \"the item will not be downloaded if it cannot fit\": a segmented HLS asset's size is estimated from its variant's BANDWIDTH × its segments' durations (the byte ranges a playlist gives counted as they are), and it waits with does-not-fit where it cannot fit whole")
    func segmentedAssetEstimated() throws {
        let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=800000\nlow/index.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=1600000\nhigh/index.m3u8\n"
        let media = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n" + (0..<10).map { "#EXTINF:2,\nsegment_\($0).ts\n" }.joined() + "#EXT-X-ENDLIST\n"
        let ranged = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-BYTERANGE:5000@0\nall.ts\n#EXTINF:2,\n#EXT-X-BYTERANGE:7000@5000\nall.ts\n#EXT-X-ENDLIST\n"
        let root = try #require(URL(string: "http://o/show/master.m3u8"))
        var options = PlanOptions()
        options.maxBitrate = 1_000_000
        let low = try #require(URL(string: "http://o/show/low/index.m3u8"))
        guard case let .plan(plan) = try HLSDownloadPlanner.step(playlist: master, url: root, options: options, documents: [low: media]) else {
            Issue.record("the plan needs no other playlist")
            return
        }
        #expect(plan.expectedBytes == nil && plan.estimatedBytes == 2_000_000, "20 s at 800 kbit/s: \(plan.estimatedBytes ?? -1)")
        guard case let .plan(lone) = try HLSDownloadPlanner.step(playlist: ranged, url: root, options: PlanOptions(), documents: [:]) else { return }
        #expect(lone.estimatedBytes == 12_000, "the byte ranges as they are")

        var asset = Self.asset("show", position: 0)
        asset.plan = plan
        let policy = QueuePolicy(rules: DownloadRules(maxStorageAllowed: 1_500_000, headroom: 0))
        #expect(policy.next(queue: [asset], environment: Self.environment(), visited: []) == .hold("show", .doesNotFit(neededBytes: 2_000_000, availableBytes: 1_500_000)))
        let roomy = QueuePolicy(rules: DownloadRules(maxStorageAllowed: 3_000_000, headroom: 0))
        #expect(roomy.next(queue: [asset], environment: Self.environment(), visited: []) == .download("show"))
    }
}
