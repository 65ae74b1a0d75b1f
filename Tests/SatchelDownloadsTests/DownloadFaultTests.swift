import Foundation
import SatchelDownloads
import SatchelTestSupport
import Testing

@Suite("Download engine: faults and retries")
struct DownloadFaultTests {
    static let segment = "asset/video_0/segment_2.ts"

    @Test("transient faults heal: a reset or truncated body resumes with Range; 500/503 bursts, slow bodies and 404s are retried",
          arguments: [TestOrigin.Fault.reset(after: 5000), .truncate(after: 3000), .shortRange(1000), .status(503), .status(500),
                      .slow(milliseconds: 5), .status(404), .status(410)])
    func heals(fault: TestOrigin.Fault) async throws {
        let world = try await DownloadWorld.make("heal")
        defer { world.origin.stop() }
        let manager = try await world.manager()
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        world.origin.inject(fault, on: Self.segment, times: 2)
        #expect(await manager.run().allComplete)
        try world.expectMediaMatchesOrigin("a")
        let requests = world.origin.log.filter { $0.path == Self.segment }
        let errors = await log.errors
        switch fault {
        case .shortRange:
            // A well-formed 206 that ends short of the file's length is not complete: retried, resumed where it stopped.
            #expect(requests.map(\.range) == [nil, "bytes=1000-", "bytes=2000-"], "\(requests.map(\.range))")
            #expect(errors.count == 2 && errors.allSatisfy { if case .network = $0.0 { return $0.1 } else { return false } })
        case .reset, .truncate:
            #expect(requests.contains { ($0.range ?? "").hasPrefix("bytes=") && $0.range != "bytes=0-" }, "resumed where the file stopped")
            #expect(errors.allSatisfy { if case .network = $0.0 { return $0.1 } else { return false } })
        case let .status(code):
            #expect(errors.map(\.0) == Array(repeating: .httpStatus(url: world.origin.url(Self.segment), status: code), count: 2))
            #expect(errors.allSatisfy { $0.1 }, "every error says it will be retried")
        default:
            #expect(errors.isEmpty)
        }
        #expect(try await manager.asset("a").retryCount == 0, "healed within the first pass")
        await manager.close()
    }

    @Test("failures name the URL without its query string (tokens stay out of logs)")
    func redaction() {
        let failure = DownloadFailure.httpStatus(url: "https://keys.example/k/1?token=s3cret", status: 403)
        #expect(failure.description == "HTTP 403 for https://keys.example/k/1?…" && !failure.isFatal && failure.needsAuthorization)
        #expect(!DownloadFailure.httpStatus(url: "https://a/b", status: 404).isFatal && !DownloadFailure.httpStatus(url: "https://a/b", status: 410).isFatal)
        #expect(DownloadFailure.mimeType(url: "https://a/b", mimeType: "text/html").isFatal, "the one fatal condition seed 003 names")
        #expect(!DownloadFailure.httpStatus(url: "https://a/b", status: 503).isFatal && DownloadFailure.headroom(freeBytes: 1, headroom: 2).isRuleLimit)
    }

    @Test("a file that changed on the origin between attempts is fetched whole again (If-Range), never spliced")
    func changedOnOrigin() async throws {
        let world = try await DownloadWorld.make("if-range")
        defer { world.origin.stop() }
        let manager = try await world.manager()
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        let original = try await TestMedia.contents(of: world.site.appendingPathComponent(Self.segment))
        let replaced = Array(original.reversed())
        world.origin.inject(.reset(after: 5000), on: Self.segment)
        world.origin.inject(.body(replaced), on: Self.segment)
        #expect(await manager.run().allComplete)
        let requests = world.origin.log.filter { $0.path == Self.segment }
        // The reset comes after 5000 bytes; how many reach the part before it depends on the machine's load.
        let resumedAt = requests.count == 2 ? requests[1].range.flatMap { Int($0.dropFirst("bytes=".count).dropLast()) } : nil
        #expect((resumedAt ?? 0) > 0 && (resumedAt ?? 0) <= 5000, "the second request asked to resume (\(requests.map(\.range)))")
        #expect(try await TestMedia.contents(of: world.assetDirectory("a").appendingPathComponent("video_0/segment_2.ts")) == Data(replaced))
        await manager.close()
    }

    @Test("an origin that ignores If-Range and answers a resume from a changed file: the part is discarded and the file fetched again from byte zero, never spliced", arguments: ["same length", "other length"])
    func changedIgnoringIfRange(change: String) async throws {
        let world = try await DownloadWorld.make("ignores-if-range")
        defer { world.origin.stop() }
        let manager = try await world.manager()
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        let original = Array(try await TestMedia.contents(of: world.site.appendingPathComponent(Self.segment)))
        // The new version: the same bytes reversed (another ETag, the same total), or longer (another total too).
        let changed = change == "same length" ? Array(original.reversed()) : original + Array(repeating: 0x47, count: 188)
        world.origin.inject(.reset(after: 5000), on: Self.segment)
        world.origin.inject(.changedIgnoringIfRange(changed), on: Self.segment)
        #expect(await manager.run().allComplete)
        let requests = world.origin.log.filter { $0.path == Self.segment }
        #expect(requests.count == 3 && requests[1].range != nil && requests[2].range == nil, "resumed, then fetched whole: \(requests.map(\.range))")
        let stored = Array(try await TestMedia.contents(of: world.assetDirectory("a").appendingPathComponent("video_0/segment_2.ts")))
        #expect(stored == original, "the file as the origin serves it now, whole: never the start of one version and the rest of another")
        await manager.close()
    }

    @Test("the one fatal error is a MIME type outside the permitted list; a 403 is retried under the Rule of Threes")
    func fatal() async throws {
        let world = try await DownloadWorld.make("fatal")
        defer { world.origin.stop() }
        let manager = try await world.manager()
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "html")
        world.origin.inject(.contentType("text/html"), on: Self.segment, times: -1)
        let summary = await manager.run()
        #expect(summary.states[.blocked] == 1)
        var asset = try await manager.asset("html")
        #expect(asset.failure == .mimeType(url: world.origin.url(Self.segment), mimeType: "text/html") && asset.retryCount == 0)
        #expect(await log.waitUntil { if case .error = $0 { return true } else { return false } })
        let errors = await log.errors
        #expect(errors.count == 1 && errors.first?.1 == false)
        #expect(world.origin.log.filter { $0.path == Self.segment }.count == 1, "tried once")

        world.origin.clearFaults()
        world.origin.inject(.status(403), on: Self.segment, times: -1)
        try await manager.clearRetryCount("html")
        _ = await manager.run()
        asset = try await manager.asset("html")
        #expect(asset.state == .blocked && asset.failure == .httpStatus(url: world.origin.url(Self.segment), status: 403))
        #expect(asset.retryCount == 3 && world.origin.log.filter { $0.path == Self.segment }.count == 1 + 9, "three attempts in each of three passes")
        await manager.close()
    }

    @Test("the rule of threes: three attempts per pass, three passes, then blocked until clearRetryCount")
    func ruleOfThrees() async throws {
        let world = try await DownloadWorld.make("threes")
        defer { world.origin.stop() }
        try await TestMedia.offloaded { try world.package("second", format: .hlsTS, scheme: .clear) }
        let manager = try await world.manager()
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "broken")
        try await manager.add(url: world.origin.url("second/master.m3u8"), id: "fine")
        // An HTML page instead of a segment (a captive portal): not fatal, but it never heals.
        world.origin.inject(.htmlPage, on: Self.segment, times: -1)
        let summary = await manager.run()
        #expect(summary.states[.blocked] == 1 && summary.states[.complete] == 1, "the queue moves on past the errored asset")
        let broken = try await manager.asset("broken")
        #expect(broken.retryCount == 3 && broken.state == .blocked)
        #expect(broken.failure == .invalidContent(url: world.origin.url(Self.segment), reason: "an HTML page instead of media"))
        let errors = await log.errors
        #expect(errors.count == 9, "3 attempts × 3 passes")
        #expect(errors.prefix(8).allSatisfy { $0.1 } && errors.last?.1 == false, "only the last error says it will not be retried")
        #expect(world.origin.log.filter { $0.path == Self.segment }.count == 9)
        // Nothing happens to a blocked asset until its retry count is cleared.
        _ = await manager.run()
        #expect(world.origin.log.filter { $0.path == Self.segment }.count == 9)
        world.origin.clearFaults()
        try await manager.clearRetryCount("broken")
        #expect(try await manager.asset("broken").state == .queued)
        #expect(await manager.run().allComplete)
        try world.expectMediaMatchesOrigin("broken")
        await manager.close()
    }
}

@Suite("Download engine: a full disk")
struct DownloadDiskFullTests {
    @Test("a full disk is a typed, retryable failure; partial files stay consistent",
          .enabled(if: getuid() == 0, "needs root to mount a small tmpfs"))
    func diskFull() async throws {
        let world = try await DownloadWorld.make("diskfull")
        defer { world.origin.stop() }
        let small = world.directory.appendingPathComponent("small")
        try FileManager.default.createDirectory(at: small, withIntermediateDirectories: true)
        guard await (try? TestMedia.run("mount", ["-t", "tmpfs", "-o", "size=96k", "tmpfs", small.path])) != nil else { return }
        defer { Self.unmount(small) }
        let manager = try await DownloadManager(configuration: .init(dataDirectory: world.dataDirectory, destination: small.path,
                                                                     rules: DownloadRules(headroom: 0), parallelism: 2,
                                                                     retryDelay: .milliseconds(1), passDelay: .milliseconds(1)),
                                                environment: DownloadEnvironment(freeSpace: { _ in 1 << 40 }, network: FixedNetwork.unmetered))
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        _ = await manager.run()
        let asset = try await manager.asset("a")
        guard case .diskFull? = asset.failure else { Issue.record("expected diskFull, got \(String(describing: asset.failure))"); return }
        #expect(asset.state == .blocked && asset.retryCount == 3, "retried like any other non-fatal failure")
        #expect(await log.errors.count == 9)
        await manager.close()
    }

    /// Unmounts `path` on a thread of its own, not waited for (from a `defer`, which cannot wait for a task; the path
    /// is the test's own, and `scripts/test` unmounts what a crashed run left).
    static func unmount(_ path: URL, lazily: Bool = false) {
        Thread { _ = try? TestMedia.run("umount", (lazily ? ["-l"] : []) + [path.path]) }.start()
    }

    /// Mounts a small tmpfs at `path` (root only); nil when mounting is not possible here.
    static func mountTmpfs(_ path: URL, options: String) async throws -> Bool {
        try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
        return await (try? TestMedia.run("mount", ["-t", "tmpfs", "-o", options, "tmpfs", path.path])) != nil
    }

    /// Fills the file system at `path` until it refuses: with `inodes`, empty files until no inode is left;
    /// otherwise one file until no block is left.
    static func fill(_ path: URL, inodes: Bool) {
        if inodes {
            for index in 0..<100_000 where !FileManager.default.createFile(atPath: path.appendingPathComponent("f\(index)").path, contents: nil) { break }
        } else {
            let chunk = Data(repeating: 0, count: 4096)
            guard let handle = try? FileHandle(forWritingTo: { let url = path.appendingPathComponent("filler")
                _ = FileManager.default.createFile(atPath: url.path, contents: nil); return url }()) else { return }
            while (try? handle.write(contentsOf: chunk)) != nil {}
            try? handle.close()
        }
    }

    @Test("no free inodes, or no free blocks under the index itself: the run stops at once and says why, never spins",
          // The limit catches a spin (the run itself takes a second); the media made first may take a minute on a loaded machine.
          .enabled(if: getuid() == 0, "needs root to mount a small tmpfs"), .timeLimit(.minutes(3)), arguments: [true, false])
    func exhausted(inodes: Bool) async throws {
        let world = try await DownloadWorld.make("exhausted")
        defer { world.origin.stop() }
        let data = world.directory.appendingPathComponent("data-small")
        guard try await Self.mountTmpfs(data, options: "size=2m,nr_inodes=64") else { return }
        defer { Self.unmount(data, lazily: true) }
        let manager = try await DownloadManager(configuration: .init(dataDirectory: data.path, rules: DownloadRules(headroom: 0),
                                                                     parallelism: 2, retryDelay: .milliseconds(1), passDelay: .milliseconds(1)),
                                                environment: DownloadEnvironment(freeSpace: { _ in 1 << 40 }, network: FixedNetwork.unmetered))
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        Self.fill(data, inodes: inodes)
        let summary = await manager.run()
        #expect(!summary.allComplete)
        let errors = await log.errors
        #expect(!errors.isEmpty || summary.storageFailure != nil, "the full disk was met")
        #expect(errors.count <= 9, "the Rule of Threes bounds the attempts (\(errors.count))")
        #expect(errors.allSatisfy { if case .diskFull = $0.0 { return true } else { if case .fileSystem = $0.0 { return true } else { return false } } },
                "\(errors.map(\.0))")
        let stored = await log.events.contains { if case .storageFailed = $0 { return true } else { return false } }
        if summary.storageFailure != nil {
            #expect(stored, "an index that cannot be written is reported as an event too")
        } else {
            // The index could still be written (SQLite's WAL needs no new inode): the failures were counted.
            #expect(try await manager.asset("a").state == .blocked && errors.count == 9)
        }
        if !inodes { #expect(summary.storageFailure != nil, "no block left: the index write fails and the run says so") }
        await manager.close()
    }

    @Test("a body that trickles below the low-speed limit fails as a retryable network error, then heals")
    func trickle() async throws {
        let world = try await DownloadWorld.make("trickle")
        defer { world.origin.stop() }
        let manager = try await DownloadManager(
            configuration: .init(dataDirectory: world.dataDirectory, rules: DownloadRules(headroom: 0), parallelism: 2,
                                 retryDelay: .milliseconds(10), passDelay: .milliseconds(10),
                                 lowSpeed: LowSpeedLimit(bytesPerSecond: 32 * 1024, period: .seconds(1))),
            environment: DownloadEnvironment(network: FixedNetwork.unmetered))
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        world.origin.inject(.slow(milliseconds: 1000), on: DownloadFaultTests.segment, times: 1)  // 4 KiB a second
        #expect(await manager.run().allComplete)
        #expect(await log.waitUntil { if case .error = $0 { return true } else { return false } })
        let errors = await log.errors
        let trickled = errors.filter { failure, willRetry in
            guard case let .network(url, message) = failure else { return false }
            return url.hasSuffix(DownloadFaultTests.segment) && message.contains("slower than") && willRetry
        }
        #expect(trickled.count == 1, "\(errors)")
        try world.expectMediaMatchesOrigin("a")
        await manager.close()
    }
}
