import Foundation
import Logging
import SatchelDownloads
import SatchelBytes
import SatchelSystem
import SatchelTestSupport
import Testing

@Suite("Logging: levels, redaction, rotation, the subscription, the engine's decisions")
struct LoggingTests {
    @Test("levels are chosen by name (option first, then SATCHEL_LOG_LEVEL); an unknown one is a clear error")
    func levels() throws {
        #expect(try SatchelLogHandler.level(named: "debug", environment: ["SATCHEL_LOG_LEVEL": "error"]) == .debug)
        #expect(try SatchelLogHandler.level(named: nil, environment: ["SATCHEL_LOG_LEVEL": "WARN"]) == .warning)
        #expect(try SatchelLogHandler.level(named: nil, environment: [:], fallback: .notice) == .notice)
        #expect(throws: LogSettingError(value: "loud")) { try SatchelLogHandler.level(named: "loud", environment: [:]) }
    }

    @Test("query strings never reach a record, whatever logs them")
    func redaction() {
        #expect(LogRedaction.redact("GET https://cdn.example/a/b.ts?token=s3cret&sig=x failed") == "GET https://cdn.example/a/b.ts?… failed")
        #expect(LogRedaction.redact("\"http://h/p?k=v\" and (https://h/q?x=1)") == "\"http://h/p?…\" and (https://h/q?…)")
        #expect(LogRedaction.redact("is it done? yes") == "is it done? yes", "a question mark outside a URL stays")
    }

    @Test("a log call never waits for the writer: with the destination stuck, 20,000 lines from 4 threads return, the oldest are dropped and counted, and a notice says so")
    func writerNeverBlocks() async throws {
        let gate = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        let written = Locked<[String]>([])
        let writer = LogWriter(capacity: 1_000) { batch in
            if written.current.isEmpty, batch.count == 1 {
                started.signal()
                gate.wait()  // blocking-ok: the writer's own thread, stuck on purpose
            }
            written.withLock { $0 += batch.map(\.line) }
        }
        writer.enqueue(.init(line: "first", standardError: false, file: nil))
        #expect(await Self.waitOnThread(started, seconds: 10), "the writer took the first line and is stuck")
        let finished = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            Thread {
                DispatchQueue.concurrentPerform(iterations: 4) { thread in
                    for index in 0..<5_000 { writer.enqueue(.init(line: "line \(thread)-\(index)", standardError: false, file: nil)) }
                }
                continuation.resume(returning: true)
            }.start()
        }
        #expect(finished && writer.droppedLines == 20_000 - 1_000, "every call returned while the destination was stuck")
        gate.signal()
        writer.flush(timeout: 10)
        let lines = written.current
        #expect(lines.first == "first" && lines.count == 1 + 1 + 1_000, "\(lines.count)")
        #expect(lines[1] == "19000 log line(s) dropped: the log could not keep up")
        // Oldest dropped first: what is kept of each thread's lines is its last ones, in order.
        var kept: [Substring: [Int]] = [:]
        for line in lines.dropFirst(2) {
            let parts = line.dropFirst(5).split(separator: "-")
            kept[parts[0], default: []].append(Int(parts[1]) ?? -1)
        }
        for (thread, indices) in kept {
            let expected = Array((5_000 - indices.count)..<5_000)
            #expect(indices == expected, "thread \(thread) keeps its newest lines")
        }
    }

    /// Waits for `semaphore` on a thread of its own (never a task-pool thread).
    static func waitOnThread(_ semaphore: DispatchSemaphore, seconds: Double) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: semaphore.wait(timeout: .now() + seconds) == .success) }.start()  // blocking-ok: its own thread
        }
    }

    @Test("a log file rotates by size, keeping the newest generations; every line whole")
    func rotation() throws {
        let directory = try TestMedia.temporaryDirectory("log-rotation")
        let path = directory.appendingPathComponent("satchel.log").path
        let file = try RotatingLogFile(path: path, maxBytes: 4096, keep: 2)
        let line = String(repeating: "x", count: 99)
        for _ in 0..<200 { file.append(line) }  // 20,000 bytes: the file rotates several times
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names == ["satchel.log", "satchel.log.1", "satchel.log.2"])
        for name in names {
            let text = try String(contentsOfFile: directory.appendingPathComponent(name).path, encoding: .utf8)
            #expect(text.utf8.count <= 4096 && text.split(separator: "\n").allSatisfy { $0 == line[...] })
        }
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("the subscription delivers records at or above the level, redacted")
    func subscription() async throws {
        let hub = LogHub()
        let logger = Logger(label: "satchel.test") { SatchelLogHandler(label: $0, level: .info, sinks: .init(standardError: false, hub: hub)) }
        let stream = hub.records()
        logger.debug("dropped")
        logger.warning("kept https://a/b?token=s3cret", metadata: ["asset": "movie"])
        var iterator = stream.makeAsyncIterator()
        let record = await iterator.next()
        #expect(record?.level == .warning && record?.message == "kept https://a/b?…" && record?.metadata == ["asset": "movie"])
        #expect(record?.line.contains("warning satchel.test: kept https://a/b?… asset=movie") == true)
    }

    @Test("the engine logs why an asset waits and each retry with its reason, never a query string or a header")
    func engineDecisions() async throws {
        let world = try await DownloadWorld.make("log-decisions")
        defer { world.origin.stop() }
        let hub = LogHub()
        let collected = Locked<[LogRecord]>([])
        let stream = hub.records()
        let reader = Task { for await record in stream { collected.withLock { $0.append(record) } } }
        defer { reader.cancel() }
        let logger = Logger(label: "satchel.downloads") { SatchelLogHandler(label: $0, level: .debug, sinks: .init(standardError: false, hub: hub)) }
        let manager = try await DownloadManager(
            configuration: .init(dataDirectory: world.dataDirectory, rules: DownloadRules(maxDownloadedAssets: 1, headroom: 0),
                                 retryDelay: .milliseconds(1), passDelay: .milliseconds(1), logger: logger),
            environment: DownloadEnvironment(network: FixedNetwork.unmetered))
        try await manager.add(url: world.origin.url("asset/master.m3u8?token=s3cret"), id: "first",
                              options: DownloadOptions(headers: ["Authorization": "Bearer s3cret-header"]))
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "second")
        world.origin.inject(.status(503), on: "asset/video_0/segment_1.ts", times: 1)
        _ = await manager.run()
        await manager.close()
        try await Task.sleep(for: .milliseconds(200))
        let lines = collected.current.map(\.line)
        #expect(lines.contains { $0.contains("attempt failed: HTTP 503 for") && $0.contains("asset=first") && $0.contains("next=retry") }, "\(lines)")
        #expect(lines.contains { $0.contains("retrying in") && $0.contains("attempt=2 of 3") })
        #expect(lines.contains { $0.contains("asset waits: maxDownloadedAssets reached") && $0.contains("asset=second") })
        #expect(lines.contains { $0.contains("asset complete") && $0.contains("asset=first") })
        #expect(!lines.contains { $0.contains("s3cret") }, "no token, header or query string")
    }
}
