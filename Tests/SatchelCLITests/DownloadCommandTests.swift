import Foundation
import SatchelBytes
import SatchelPackager
import SatchelTestSupport
import Testing

@Suite("satchel download")
struct DownloadCommandTests {
    /// An origin serving one HLS package at `asset/master.m3u8`.
    static func origin(seconds: Int = 6, size: String = "320x240") async throws -> (TestOrigin, URL) {
        let directory = try CLIRunner.temporaryDirectory()
        let site = directory.appendingPathComponent("site")
        let input = try await TestMedia.offloaded { try TestMedia.make("cli-download-\(seconds)-\(size)", seconds: seconds, size: size) }
        try await TestMedia.offloaded {
            _ = try Packager(options: PackageOptions(inputs: [input.path], output: site.appendingPathComponent("asset").path, format: .hlsTS,
                                                     scheme: .clear, segmentDuration: 1)).run()
        }
        return (try await TestOrigin.start(root: site), directory)
    }

    static func run(_ arguments: [String]) async throws -> CLIRunner.Result {
        try await TestMedia.offloaded { try CLIRunner.run(arguments) }
    }

    static func list(_ data: String) async throws -> [[String: Any]] {
        let result = try await run(["download", "list", "--data-dir", data, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]])
    }

    @Test("add, run, list, pause, resume, remove, flush, enable, disable; exit codes say complete (0), blocked (1), waiting (3)")
    func commands() async throws {
        let (origin, directory) = try await Self.origin()
        defer { origin.stop() }
        let data = directory.appendingPathComponent("data").path
        let url = origin.url("asset/master.m3u8")
        let added = try await Self.run(["download", "add", url, "--data-dir", data, "--id", "a", "--max-bitrate", "0", "--expiry", "2099-01-01"])
        #expect(added.status == 0 && added.stdout.hasPrefix("a\thls\t"), "\(added.stderr)")
        let live = try await Self.run(["download", "add", origin.url("asset/missing.m3u8"), "--data-dir", data])
        #expect(live.status == 1 && live.stderr.hasPrefix("satchel: error: cannot fetch the manifest: HTTP 404"))
        let badDate = try await Self.run(["download", "add", url, "--data-dir", data, "--expiry", "soon"])
        #expect(badDate.status != 0 && badDate.stderr.contains("ISO 8601"))

        #expect(try await Self.run(["download", "disable", "--data-dir", data]).status == 0)
        #expect(try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0"]).status == 3, "disabled: nothing downloads")
        #expect(try await Self.run(["download", "enable", "--data-dir", data]).status == 0)
        let run = try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0", "--parallel", "3"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("a: complete"))
        var rows = try await Self.list(data)
        #expect(rows.count == 1 && rows[0]["state"] as? String == "complete")
        let progress = try #require(rows[0]["progress"] as? [String: Any])
        #expect(progress["fraction"] as? Double == 1 && progress["isReadyToPlay"] as? Bool == true)
        let master = try #require(rows[0]["path"] as? String)
        #expect(try await TestMedia.offloaded { try TestMedia.packetCounts(URL(fileURLWithPath: master)) }["video"] ?? 0 > 0)

        #expect(try await Self.run(["download", "add", url, "--data-dir", data, "--id", "b"]).status == 0)
        #expect(try await Self.run(["download", "pause", "b", "--data-dir", data]).status == 0)
        rows = try await Self.list(data)
        #expect(rows.last?["paused"] as? Bool == true)
        #expect(try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0"]).status == 3, "paused: not complete")
        #expect(try await Self.run(["download", "resume", "b", "--data-dir", data]).status == 0)
        #expect(try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0"]).status == 0)

        origin.inject(.status(403), on: "segment_1.ts", times: -1)
        #expect(try await Self.run(["download", "add", url, "--data-dir", data, "--id", "c"]).status == 0)
        let blocked = try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0", "--retry-delay", "0"])
        #expect(blocked.status == 1 && blocked.stderr.contains("HTTP 403"))
        #expect(try await Self.run(["download", "flush", "--data-dir", data]).status == 0)
        #expect(try await Self.list(data).map { $0["id"] as? String } == ["a", "b"])
        #expect(try await Self.run(["download", "remove", "a", "--data-dir", data]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("data/assets/a").path))
        let missing = try await Self.run(["download", "remove", "a", "--data-dir", data])
        #expect(missing.status == 1 && missing.stderr == "satchel: error: no asset with ID a\n")
    }

    @Test("the queue API (seed 003 \"Enqueue\"): a description and the app's values kept and returned; added at a place, moved, listed in queue order; the window changed after enqueue, applied at once (past its end: expired, files gone)")
    func queueAPI() async throws {
        let (origin, directory) = try await Self.origin(seconds: 2)
        defer { origin.stop() }
        let data = directory.appendingPathComponent("data").path
        let url = origin.url("asset/master.m3u8")
        for id in ["a", "b", "c"] { #expect(try await Self.run(["download", "add", url, "--data-dir", data, "--id", id]).status == 0) }
        let pilot = try await Self.run(["download", "add", url, "--data-dir", data, "--id", "pilot", "--position", "0", "--description", "The pilot",
                                        "--user-info", #"{"season": 2, "tags": ["new"]}"#])
        #expect(pilot.status == 0, "\(pilot.stderr)")
        var rows = try await Self.list(data)
        #expect(rows.map { $0["id"] as? String } == ["pilot", "a", "b", "c"], "inserted first")
        #expect(rows[0]["description"] as? String == "The pilot")
        let info = try #require(rows[0]["userInfo"] as? [String: Any])
        #expect(info["season"] as? Int == 2 && (info["tags"] as? [String]) == ["new"])
        let notObject = try await Self.run(["download", "add", url, "--data-dir", data, "--id", "x", "--user-info", "[1]"])
        #expect(notObject.status != 0 && notObject.stderr.contains("--user-info is a JSON object"), "\(notObject.stderr)")

        #expect(try await Self.run(["download", "move", "c", "--to", "1", "--data-dir", data]).status == 0)
        #expect(try await Self.run(["download", "move", "pilot", "--to", "99", "--data-dir", data]).status == 0)
        #expect(try await Self.list(data).map { $0["id"] as? String } == ["c", "a", "b", "pilot"], "c to place 1, then the pilot past the end")
        let missing = try await Self.run(["download", "move", "nope", "--to", "0", "--data-dir", data])
        #expect(missing.status != 0 && missing.stderr.contains("no asset with ID nope"))

        #expect(try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0"]).status == 0)
        let later = try await Self.run(["download", "window", "a", "--expiry", "2099-01-01", "--expiry-after-play", "3600", "--data-dir", data])
        #expect(later.status == 0 && later.stdout.contains("a: window changed; complete"), "\(later.stdout) \(later.stderr)")
        rows = try await Self.list(data)
        let window = try #require(rows.first { $0["id"] as? String == "a" }?["window"] as? [String: Any])
        #expect(window["expiryAfterPlay"] as? Int == 3600 && window["expiryDate"] != nil, "\(window)")
        let ended = try await Self.run(["download", "window", "b", "--expiry", "2020-01-01", "--data-dir", data])
        #expect(ended.status == 0 && ended.stdout.contains("b: window changed; expired"), "applied at once: \(ended.stdout) \(ended.stderr)")
        #expect(try await Self.list(data).first { $0["id"] as? String == "b" }?["state"] as? String == "expired")
        #expect(TestMedia.files(under: URL(fileURLWithPath: data).appendingPathComponent("assets/b")).filter { $0.hasSuffix(".ts") }.isEmpty, "its files are gone")
        let cleared = try await Self.run(["download", "window", "a", "--expiry", "none", "--data-dir", data])
        #expect(cleared.status == 0)
        #expect((try await Self.list(data).first { $0["id"] as? String == "a" }?["window"] as? [String: Any])?["expiryDate"] == nil)
    }

    @Test("storage before starting (seed 003): an asset larger than --max-storage allows does not start — nothing downloaded, it waits with does-not-fit in download list — and downloads once the rule allows it")
    func wholeItemMustFit() async throws {
        let (origin, directory) = try await Self.origin(seconds: 1)
        defer { origin.stop() }
        try Data(TestMedia.mediaBytes(3 << 20)).write(to: directory.appendingPathComponent("site/big.mp4"))
        let data = directory.appendingPathComponent("data").path
        let added = try await Self.run(["download", "add", origin.url("big.mp4"), "--id", "big", "--data-dir", data])
        #expect(added.status == 0, "\(added.stderr)")
        let held = try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0", "--max-storage", "2"])
        #expect(held.status == 3, "it waits: \(held.stderr)")
        let row = try #require(try await Self.list(data).first)
        #expect(row["state"] as? String == "waiting" && (row["failure"] as? String)?.contains("does not fit: it needs 3145728 bytes") == true, "\(row)")
        let stored = TestMedia.files(under: URL(fileURLWithPath: data).appendingPathComponent("assets/big")).filter { !$0.hasPrefix(".satchel") }
        // Only `download add`'s probe of its head (64 KiB); no download of it.
        let asked = origin.log.filter { $0.path.hasSuffix("big.mp4") }.map { $0.range ?? "the whole file" }
        #expect(asked == ["bytes=0-65535"] && stored.isEmpty, "nothing of it downloaded: \(asked) \(stored)")
        let ran = try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0", "--max-storage", "4"])
        #expect(ran.status == 0, "\(ran.stderr)")
        #expect(try await Self.list(data).first?["state"] as? String == "complete")
    }

    @Test("`download pause` and `download disable` from another process stop a running `download run` within a second or two")
    func crossProcess() async throws {
        let (origin, directory) = try await Self.origin(seconds: 10, size: "640x360")
        defer { origin.stop() }
        let data = directory.appendingPathComponent("data").path
        #expect(try await Self.run(["download", "add", origin.url("asset/master.m3u8"), "--data-dir", data, "--id", "x"]).status == 0)
        origin.setThrottle(chunk: 2 * 1024, microseconds: 50_000)  // ≈ 40 KB/s a connection: minutes for the asset
        let binary = try #require(CLIRunner.binary)
        for command in [["pause", "x"], ["disable"]] {
            let process = Process()
            process.executableURL = binary
            process.arguments = ["download", "run", "--data-dir", data, "--headroom", "0"]
            process.standardError = FileHandle.nullDevice
            let asked = origin.log.count
            try process.run()
            // Once it is fetching (a loaded machine took over 700 ms to start it, and a pause recorded before it looked
            // at the queue left it nothing to do: exit 0), and a moment more.
            for _ in 0..<1_500 where origin.log.count == asked && process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
            try await Task.sleep(for: .milliseconds(300))
            #expect(try await Self.run(["download"] + command + ["--data-dir", data]).status == 0)
            // Counted from the moment the command has recorded the pause: the throttled asset needs minutes, so stopping
            // within seconds is the running process taking the pause or disable into account (room for a loaded machine).
            let started = Date()
            while process.isRunning, Date().timeIntervalSince(started) < 15 { try await Task.sleep(for: .milliseconds(20)) }
            let elapsed = Date().timeIntervalSince(started)
            #expect(!process.isRunning && elapsed < 8, "stopped \(elapsed) s after \(command)")
            if process.isRunning { process.terminate() }
            try await TestMedia.exit(of: process)
            #expect(process.terminationStatus == 3, "waiting, not blocked")
            #expect(try await Self.run(["download", command == ["disable"] ? "enable" : "resume", "x", "--data-dir", data].filter { command != ["disable"] || $0 != "x" }).status == 0)
        }
        let rows = try await Self.list(data)
        #expect(rows.first?["state"] as? String == "queued" && rows.first?["paused"] as? Bool == false)
    }

    @Test("crash safety: `download run` killed with SIGKILL at random moments, then run again, leaves files identical to the origin's")
    func sigkill() async throws {
        let (origin, directory) = try await Self.origin(seconds: 10, size: "640x360")
        defer { origin.stop() }
        let data = directory.appendingPathComponent("data").path
        #expect(try await Self.run(["download", "add", origin.url("asset/master.m3u8"), "--data-dir", data, "--id", "x"]).status == 0)
        origin.setThrottle(chunk: 4 * 1024, microseconds: 25_000)  // ≈ 160 KB/s a connection, so kills land mid-file
        let binary = try #require(CLIRunner.binary)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<10 {
            let process = Process()
            process.executableURL = binary
            process.arguments = ["download", "run", "--data-dir", data, "--headroom", "0", "--parallel", "4"]
            process.standardError = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            // Killed once a file is under way (a loaded machine may take a while to start the process), at a
            // random moment after.
            let folder = directory.appendingPathComponent("data/assets/x")
            func started() -> Bool {
                TestMedia.files(under: folder).contains { path in
                    path.hasSuffix(".part") && ((try? FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(path).path)[.size] as? Int) ?? 0) > 0
                }
            }
            for _ in 0..<100 where !started() {
                try await Task.sleep(for: .milliseconds(50))
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...400, using: &generator)))
            kill(process.processIdentifier, SIGKILL)
            try await TestMedia.exit(of: process)
        }
        origin.setThrottle(chunk: 1 << 20, microseconds: 0)
        let final = try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0"])
        #expect(final.status == 0, "\(final.stderr)")
        let local = directory.appendingPathComponent("data/assets/x")
        let media = TestMedia.files(under: local).filter { !$0.hasSuffix(".m3u8") && !$0.hasPrefix(".satchel/") }
        #expect(!media.isEmpty && !media.contains { $0.hasSuffix(".part") || $0.hasSuffix(".tmp") })
        for path in media {
            let originFile = directory.appendingPathComponent("site/asset").appendingPathComponent(path)
            #expect(try await TestMedia.contents(of: local.appendingPathComponent(path)) == (try await TestMedia.contents(of: originFile)), "\(path)")
        }
        let rows = try await Self.list(data)
        let progress = try #require(rows.first?["progress"] as? [String: Any])
        #expect(progress["fraction"] as? Double == 1 && progress["completedFiles"] as? Int == media.count)
        #expect(origin.log.contains { $0.range != nil }, "some file was resumed with a Range request (\(origin.log.count) requests)")
    }

    @Test("--log-level and --log-file: the engine's decisions go to the file (0600, not stderr), without the asset's token; update-url takes a fresh one")
    func logging() async throws {
        let (origin, directory) = try await Self.origin(seconds: 2)
        defer { origin.stop() }
        let data = directory.appendingPathComponent("data").path, log = directory.appendingPathComponent("engine.log").path
        let url = origin.url("asset/master.m3u8?token=s3cret-query")
        #expect(try await Self.run(["download", "add", url, "--data-dir", data, "--id", "a", "--header", "Authorization: Bearer s3cret-header"]).status == 0)
        origin.inject(.status(403), on: "segment_0.ts", times: 1)
        let run = try await Self.run(["download", "run", "--data-dir", data, "--headroom", "0", "--retry-delay", "0",
                                      "--log-level", "info", "--log-file", log])
        #expect(run.status == 0, "\(run.stderr)")
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.contains("info satchel.downloads: attempt started asset=a") && text.contains("attempt failed: HTTP 403"), "\(text)")
        #expect(text.contains("the origin wants fresh credentials (HTTP 403)") && text.contains("asset complete asset=a"))
        #expect(!text.contains("s3cret") && !run.stderr.contains("satchel.downloads"), "no token in the log; the log is not on stderr")
        #expect(try FileManager.default.attributesOfItem(atPath: log)[.posixPermissions] as? Int == 0o600)

        let unknown = try await Self.run(["download", "list", "--data-dir", data, "--log-level", "loud"])
        #expect(unknown.status == 1 && unknown.stderr.contains("unknown log level \"loud\" (trace, debug, info"), "\(unknown.stderr)")
        let updated = try await Self.run(["download", "update-url", "a", "--data-dir", data, "--url", origin.url("asset/master.m3u8?token=fresh")])
        #expect(updated.status == 0, "\(updated.stderr)")
        let rows = try await Self.list(data)
        #expect((rows.first?["url"] as? String)?.hasSuffix("token=fresh") == true)
        #expect(try await Self.run(["download", "update-url", "a", "--data-dir", data]).status != 0, "nothing to update is an error")
    }
}
