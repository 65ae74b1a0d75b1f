import Foundation
import SatchelDownloads
import SatchelTestSupport
import Testing

@Suite("Adaptive parallelism")
struct AdaptiveParallelismTests {
    /// Runs a controller for `seconds` against a link whose throughput (bytes/s) at `limit` files at once
    /// is `rate(limit)`, observing every 50 ms; returns the controller and every limit it chose.
    func simulate(_ control: AdaptiveParallelism, seconds: Double, rate: (Int) -> Double) -> (AdaptiveParallelism, [Int]) {
        var control = control
        var bytes = 0.0, limits = [control.limit]
        for step in 0...Int(seconds / 0.05) {
            bytes += rate(control.limit) * 0.05
            let limit = control.observe(bytes: Int64(bytes), at: Double(step) * 0.05)
            if limit != limits.last { limits.append(limit) }
        }
        return (control, limits)
    }

    @Test("an origin that caps each connection: grows by half again while each step pays, stops where the link is full")
    func perConnectionCap() {
        // 1 MB/s per connection, 25 MB/s in all.
        let (control, limits) = simulate(AdaptiveParallelism(initial: 16, maximum: 48), seconds: 20) { min(Double($0) * 1e6, 25e6) }
        #expect(limits == [16, 24, 36, 24], "24 gained 50 %, 36 nothing (the link is full), so back to 24")
        #expect(control.isSettled && control.limit == 24)
    }

    @Test("a full link: one probe, back to the start, and no growth after")
    func saturated() {
        let (control, limits) = simulate(AdaptiveParallelism(initial: 16, maximum: 48), seconds: 20) { _ in 12.5e6 }
        #expect(limits == [16, 24, 16])
        #expect(control.isSettled && control.limit == 16)
    }

    @Test("a long round trip: throughput grows with connections until the maximum, never beyond")
    func maximum() {
        let (control, limits) = simulate(AdaptiveParallelism(initial: 4, maximum: 10), seconds: 30) { Double($0) * 1e6 }
        #expect(limits == [4, 6, 9, 10])
        #expect(control.isSettled && control.limit == 10)
        let fixed = simulate(AdaptiveParallelism(initial: 8, maximum: 8), seconds: 10) { Double($0) * 1e6 }
        #expect(fixed.1 == [8] && fixed.0.isSettled, "maximum = initial: fixed")
        let zero = AdaptiveParallelism(initial: 0, maximum: -3)
        #expect(zero.limit == 1 && zero.maximum == 1)
    }

    @Test("a step is judged only after its connections had time to open, on a whole window")
    func window() {
        var control = AdaptiveParallelism(initial: 2, maximum: 8, window: 1, settle: 0.25)
        #expect(control.observe(bytes: 0, at: 100) == 2)
        #expect(control.observe(bytes: 1_000, at: 100.125) == 2, "still settling")
        #expect(control.observe(bytes: 2_000, at: 100.25) == 2, "the window begins")
        #expect(control.observe(bytes: 3_000, at: 101) == 2, "the window is not whole")
        #expect(control.observe(bytes: 4_000, at: 101.25) == 3)
        // Bytes going backwards (a discarded file) make a slower window: the step is undone.
        #expect(control.observe(bytes: 4_000, at: 101.5) == 3)
        #expect(control.observe(bytes: 0, at: 102.5) == 2)
        #expect(control.isSettled)
    }

    @Test("the engine opens more connections when each is throttled, and keeps to a fixed parallelism when told to")
    func engineGrows() async throws {
        let world = try await DownloadWorld.make("adaptive", seconds: 12)
        defer { world.origin.stop() }
        // About 80 KB/s per connection: 2 take some 4 s, so the first step (judged 1.25 s in) always finds files left to
        // fetch (at 160 KB/s the download could end before it on a loaded machine, and the engine never grew).
        world.origin.setThrottle(chunk: 4096, microseconds: 50_000)
        let adaptive = try await DownloadManager(configuration: .init(dataDirectory: world.dataDirectory, rules: DownloadRules(headroom: 0),
                                                                      parallelism: 2, maxParallelism: 8, progressInterval: .milliseconds(50)),
                                                 environment: DownloadEnvironment(network: FixedNetwork.unmetered))
        try await adaptive.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        #expect(await adaptive.run().allComplete)
        await adaptive.close()
        #expect(world.origin.peakConcurrentBodies > 2, "grew past the 2 it started with")
        try world.expectMediaMatchesOrigin("a")

        let fixedWorld = try await DownloadWorld.make("fixed", seconds: 12)
        defer { fixedWorld.origin.stop() }
        fixedWorld.origin.setThrottle(chunk: 4096, microseconds: 25_000)
        let fixed = try await fixedWorld.manager(parallelism: 2)
        try await fixed.add(url: fixedWorld.origin.url("asset/master.m3u8"), id: "b")
        #expect(await fixed.run().allComplete)
        await fixed.close()
        #expect(fixedWorld.origin.peakConcurrentBodies == 2)
    }
}
