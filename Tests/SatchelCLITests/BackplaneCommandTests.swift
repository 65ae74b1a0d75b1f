import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing

/// The backplane end to end (seed 003's Download2Go Backplane, issue "The backplane"): a real `satchel serve`, real
/// `satchel agent` processes and the download engine; the operator through `satchel backplane`.
@Suite(.serialized) struct BackplaneCommandTests {
    typealias Server = AgentCommandTests.Server

    /// A server with an operator key, and the operator's command line against it.
    final class World: @unchecked Sendable {
        let server: Server
        let key: String

        init(_ name: String, serveArguments: [String] = []) async throws {
            server = try await Server(name)
            key = server.directory.appendingPathComponent("operator.key").path
            try (Base64URL.encode(SecureRandom.bytes(32)) + "\n").write(toFile: key, atomically: true, encoding: .utf8)
            server.serveArguments = ["--operator-key-file", key] + serveArguments
            try await server.start()
        }

        /// `satchel backplane ARGUMENTS --server … --operator-key-file …`.
        func backplane(_ arguments: [String]) throws -> CLIRunner.Result {
            try CLIRunner.run(["backplane"] + arguments + ["--server", server.url, "--operator-key-file", key])
        }

        /// `backplane devices list --json`, by device ID.
        func devices() throws -> [String: [String: Any]] {
            let listed = try backplane(["devices", "list", "--json"])
            let array = try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]], "\(listed.stderr)")
            return Dictionary(uniqueKeysWithValues: array.compactMap { device in (device["deviceID"] as? String).map { ($0, device) } })
        }

        /// A device registered for `user` in its own data directory: its directory, ID and registration's stderr.
        func device(_ name: String, user: String = "user-42", external: String? = nil) throws -> (directory: String, id: String, stderr: String) {
            let directory = server.directory.appendingPathComponent(name).path
            let registered = try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(subject: user), "--data-dir", directory]
                                               + (external.map { ["--external-id", $0] } ?? []))
            #expect(registered.status == 0, "\(registered.stderr)")
            return (directory, registered.stdout.trimmingCharacters(in: .whitespacesAndNewlines), registered.stderr)
        }
    }

    /// A 2-second MP4 on an origin: what the devices download.
    static func origin(_ world: World) async throws -> TestOrigin {
        try TestMedia.require("ffmpeg")
        let site = world.server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let clip = try await TestMedia.offloaded { try TestMedia.make("backplane-clip", seconds: 2) }
        try FileManager.default.copyItem(at: clip, to: site.appendingPathComponent("clip.mp4"))
        return try await TestOrigin.start(root: site)
    }

    static func listJSON(_ directory: String) throws -> [[String: Any]] {
        let listed = try CLIRunner.run(["download", "list", "--data-dir", directory, "--json"])
        return try #require(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]], "\(listed.stdout) \(listed.stderr)")
    }

    @Test("a device registered again is told already-registered; a device beyond its user's limit registers disabled with the notice and downloads nothing (exit 1, the reason said); the operator enables it once another is disabled; limits are per user")
    func deviceLimit() async throws {
        let world = try await World("backplane-limit")
        defer { world.server.stop() }
        let origin = try await Self.origin(world)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            #expect(try world.backplane(["limits", "set", "--max-devices", "1"]).status == 0)
            #expect(try world.backplane(["limits", "set", "--user", "family", "--max-devices", "2"]).status == 0, "a user's limit before any device")
            #expect(try world.backplane(["limits", "set", "--user", "friends", "--max-streams", "3"]).status == 0)
            // What holds for a user (their own over the global), the global alone, and the users with their own, paged.
            let shown = try world.backplane(["limits", "show", "--user", "family"])
            #expect(shown.stdout.contains("family: max devices 2,") && !shown.stdout.contains("(the global limits)"), "\(shown.stdout)")
            #expect(try world.backplane(["limits", "show", "--user", "stranger"]).stdout.contains("stranger: max devices 1, max assets per device no limit"))
            #expect(try world.backplane(["limits", "show"]).stdout.hasPrefix("global: max devices 1,"))
            let long = try world.backplane(["limits", "show", "--user", String(repeating: "u", count: 201)])
            #expect(long.status != 0 && long.stderr.contains("a user is 1 to 200 bytes"), "\(long.stderr)")
            let listed = try world.backplane(["limits", "list", "--limit", "1"])
            #expect(listed.stdout.hasPrefix("family\tmax devices 2,") && listed.stderr.contains("more: --after "), "\(listed.stdout) \(listed.stderr)")
            let all = try world.backplane(["limits", "list", "--all"]).stdout.split(separator: "\n")
            #expect(all.count == 2 && all[1].contains(#""user":"friends""#) && all[1].contains(#""maxStreams":3"#), "\(all)")
            let first = try world.device("first")
            #expect(!first.stderr.contains("device-limit-reached") && !first.stderr.contains("notice"), "\(first.stderr)")
            let again = try world.device("first")
            #expect(again.id == first.id && again.stderr.contains("notice: already-registered"), "registered again: \(again.stderr)")
            let second = try world.device("second")
            #expect(second.stderr.contains("device-limit-reached"), "the notice: \(second.stderr)")
            var devices = try world.devices()
            #expect(devices[first.id]?["downloadEnabled"] as? Bool == true && devices[second.id]?["downloadEnabled"] as? Bool == false)
            #expect(devices[second.id]?["state"] as? String == "active" && devices[second.id]?["user"] as? String == "user-42")
            // Two devices of "family" (its own limit of 2) are both enabled; a third is not.
            let family = try (1...3).map { try world.device("family-\($0)", user: "family") }
            devices = try world.devices()
            #expect(family.map { devices[$0.id]?["downloadEnabled"] as? Bool } == [true, true, false])

            #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "clip", "--data-dir", second.directory]).status == 0)
            let refused = try CLIRunner.run(["download", "run", "--data-dir", second.directory])
            #expect(refused.status == 1 && refused.stderr.contains("this device's downloads are disabled (device-not-enabled)"), "\(refused.stderr)")
            #expect(try Self.listJSON(second.directory).first?["state"] as? String == "queued", "nothing downloaded")
            #expect(!FileManager.default.fileExists(atPath: second.directory + "/assets/clip/clip.mp4"))

            // Enabling the second is refused while the first holds the limit; disabling the first makes room.
            let over = try world.backplane(["devices", "enable", second.id])
            #expect(over.status != 0 && over.stderr.contains("device limit reached"), "\(over.stderr)")
            #expect(try world.backplane(["devices", "disable", first.id]).status == 0)
            #expect(try world.backplane(["devices", "enable", second.id]).status == 0)
            let ran = try CLIRunner.run(["download", "run", "--data-dir", second.directory])
            #expect(ran.status == 0, "the sync before work took the toggle: \(ran.stderr)")
            #expect(try Self.listJSON(second.directory).first?["state"] as? String == "complete")
            // The first, now disabled, syncs and refuses to download.
            #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "clip", "--data-dir", first.directory]).status == 0)
            let disabled = try CLIRunner.run(["download", "run", "--data-dir", first.directory])
            #expect(disabled.status == 1 && disabled.stderr.contains("applied 1: download-enabled false"), "\(disabled.stderr)")
            // Forgotten, the first leaves the list; when it syncs again it is enrolled anew.
            let forgot = try world.backplane(["devices", "delete", first.id])
            #expect(forgot.status == 0 && forgot.stdout.contains("forgot \(first.id)"), "\(forgot.stderr)")
            #expect(try world.devices()[first.id] == nil)
            #expect(try CLIRunner.run(["agent", "sync", "--data-dir", first.directory]).status == 0)
            #expect(try world.devices()[first.id] != nil, "enrolled anew at its sync")
        }
    }

    @Test("the device's asset limit: a second asset is refused with the reason (blocked, nothing fetched); removing the first on the device gives its grant back and the second downloads")
    func assetLimit() async throws {
        let world = try await World("backplane-assets")
        defer { world.server.stop() }
        let origin = try await Self.origin(world)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            #expect(try world.backplane(["limits", "set", "--max-devices", "3", "--max-assets-per-device", "1"]).status == 0)
            let device = try world.device("device")
            for id in ["one", "two"] {
                #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", id, "--data-dir", device.directory]).status == 0)
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(run.status == 1 && run.stderr.contains("download permission refused (device-asset-limit)"), "\(run.stderr)")
            let states = Dictionary(uniqueKeysWithValues: try Self.listJSON(device.directory).map { ($0["id"] as? String ?? "", $0["state"] as? String ?? "") })
            #expect(states == ["one": "complete", "two": "blocked"], "\(states)")
            #expect(try CLIRunner.run(["download", "remove", "one", "--data-dir", device.directory]).status == 0)
            #expect(try CLIRunner.run(["download", "clear-retries", "two", "--data-dir", device.directory]).status == 0)
            let again = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try Self.listJSON(device.directory).first?["state"] as? String == "complete")
        }
    }

    @Test("commands queued for an offline device arrive at its next sync in the order issued, each applied once; the server down is a communications failure and nothing is lost")
    func queuedCommands() async throws {
        let world = try await World("backplane-queue")
        defer { world.server.stop() }
        let origin = try await Self.origin(world)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            let device = try world.device("device", external: "tv-7")
            for id in ["a", "b", "c"] {
                #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", id, "--data-dir", device.directory]).status == 0)
            }
            #expect(try CLIRunner.run(["download", "run", "--data-dir", device.directory]).status == 0)
            #expect(try world.backplane(["devices", "delete-asset", "ext:tv-7", "b"]).status == 0, "by external ID")
            #expect(try world.backplane(["devices", "delete-asset", device.id, "a"]).status == 0)
            world.server.stop()
            let offline = try CLIRunner.run(["agent", "sync", "--data-dir", device.directory])
            #expect(offline.status != 0 && offline.stderr.contains("cannot be reached"), "\(offline.stderr)")
            #expect(try Self.listJSON(device.directory).count == 3, "nothing applied without the server")
        }
        try await world.server.start()
        try await TestMedia.offloaded {
            let device = world.server.directory.appendingPathComponent("device").path
            let synced = try CLIRunner.run(["agent", "sync", "--data-dir", device])
            #expect(synced.status == 0, "\(synced.stderr)")
            let lines = synced.stdout.split(separator: "\n").map(String.init)
            #expect(lines.prefix(2) == ["applied 1: delete-asset b", "applied 2: delete-asset a"], "in order: \(synced.stdout)")
            #expect(try Self.listJSON(device).compactMap { $0["id"] as? String } == ["c"])
            let again = try CLIRunner.run(["agent", "sync", "--data-dir", device])
            #expect(again.status == 0 && !again.stdout.contains("applied 1") && again.stdout.contains("0 commands applied"), "each once: \(again.stdout)")
            let shown = try world.backplane(["devices", "show", "ext:tv-7", "--json"])
            let json = try #require(try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any])
            #expect(json["lastSync"] is String, "the sync is recorded: \(shown.stdout)")
        }
    }

    @Test("agent listen stopped the instant it is connected exits 0; a remote wipe reaches a listening agent at once and removes its downloads and licenses; a remote kill then unregisters it and its later calls are refused")
    func wipeAndKill() async throws {
        let world = try await World("backplane-wipe")
        defer { world.server.stop() }
        let origin = try await Self.origin(world)
        defer { origin.stop() }
        let device = try await TestMedia.offloaded { () throws -> (directory: String, id: String, stderr: String) in
            let device = try world.device("device")
            let acquired = try CLIRunner.run(["license", "acquire", "clip", "--token", try world.server.token(), "--data-dir", device.directory, "--persistent"])
            #expect(acquired.status == 0, "\(acquired.stderr)")
            #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "clip", "--data-dir", device.directory]).status == 0)
            #expect(try CLIRunner.run(["download", "run", "--data-dir", device.directory]).status == 0)
            return device
        }
        try await TestMedia.offloaded {
            // Stopped the instant it says it is connected: a stop, not a death by the signal (exit 0).
            for round in 0..<5 {
                let stopped = try EarlyStop.run(["agent", "listen", "--data-dir", device.directory])
                #expect(stopped.line == "listening: connected to the backplane" && stopped.exited && stopped.status == 0,
                        "round \(round): \(stopped.line) \(stopped.status) \(stopped.stderr)")
            }
        }
        let listener = try LineReader(["agent", "listen", "--data-dir", device.directory])
        defer { listener.stop() }
        try await TestMedia.offloaded {
            #expect(listener.wait(for: "listening: connected", seconds: 20), "\(listener.lines)")
            let issued = Date()
            #expect(try world.backplane(["devices", "wipe", device.id]).status == 0)
            #expect(listener.wait(for: "applied 1: wipe", seconds: 10), "\(listener.lines)")
            let elapsed = Date().timeIntervalSince(issued)
            #expect(elapsed < 2, "pushed, not polled: \(elapsed) s from issue (CLI start included) to applied")
            #expect(try Self.listJSON(device.directory).isEmpty, "the downloads are gone")
            #expect(!FileManager.default.fileExists(atPath: device.directory + "/assets/clip"))
            let rights = try CLIRunner.run(["rights", "clip", "--data-dir", device.directory, "--json"])
            #expect(rights.stdout.contains("no-rights"), "the license is gone: \(rights.stdout)")

            #expect(try world.backplane(["devices", "kill", device.id]).status == 0)
            #expect(listener.wait(for: "applied 2: kill", seconds: 10), "\(listener.lines)")
        }
        let ended = try await TestMedia.offloaded { listener.waitForExit(seconds: 15) }
        #expect(ended == 1, "listen ends with the kill, exit 1")
        try await TestMedia.offloaded {
            #expect(listener.stderr.contains("remote-kill"), "\(listener.stderr)")
            let sync = try CLIRunner.run(["agent", "sync", "--data-dir", device.directory])
            #expect(sync.status != 0 && sync.stderr.contains("no registered device"), "unregistered: \(sync.stderr)")
            let again = try CLIRunner.run(["agent", "register", "--server", world.server.url, "--token", try world.server.token(), "--data-dir", device.directory])
            #expect(again.status != 0 && again.stderr.contains("remotely killed"), "\(again.stderr)")
            let acquire = try CLIRunner.run(["license", "acquire", "clip", "--token", try world.server.token(), "--data-dir", device.directory])
            #expect(acquire.status != 0)
            #expect(try world.devices()[device.id]?["state"] as? String == "killed")
        }
    }

    @Test("settings pushed change a device's default availability window (EAD/EAP) for assets added after the sync and govern its download rules; the operator API refuses a wrong key")
    func settingsPushed() async throws {
        let world = try await World("backplane-settings")
        defer { world.server.stop() }
        let origin = try await Self.origin(world)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            let device = try world.device("device")
            let set = try world.backplane(["settings", "set", "--expiry-after-download", "7200", "--expiry-after-play", "600", "--json"])
            #expect(set.status == 0 && set.stdout.contains("7200"), "\(set.stdout) \(set.stderr)")
            let synced = try CLIRunner.run(["agent", "sync", "--data-dir", device.directory, "--json"])
            #expect(synced.status == 0 && synced.stdout.contains("\"expiryAfterDownload\" : 7200"), "\(synced.stdout)")
            #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "clip", "--data-dir", device.directory]).status == 0)
            let listed = try Self.listJSON(device.directory)
            let window = try #require(listed.first?["window"] as? [String: Any], "\(listed)")
            #expect(window["expiryAfterDownload"] as? Int == 7200 && window["expiryAfterPlay"] as? Int == 600, "\(window)")
            #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "own", "--expiry-after-download", "60",
                                       "--data-dir", device.directory]).status == 0)
            let own = try Self.listJSON(device.directory).first { $0["id"] as? String == "own" }?["window"] as? [String: Any]
            #expect(own?["expiryAfterDownload"] as? Int == 60, "an asset's own window wins")

            // The download rules pushed govern the device's engine over its own command line.
            #expect(try world.backplane(["settings", "set", "--max-downloaded-assets", "0"]).status == 0)
            let held = try CLIRunner.run(["download", "run", "--data-dir", device.directory, "--headroom", "0", "--max-assets", "100"])
            #expect(held.status == 3, "\(held.stderr)")
            #expect(try Self.listJSON(device.directory).allSatisfy { ($0["failure"] as? String)?.contains("maxDownloadedAssets reached") == true })

            let wrong = server(world, key: "not-the-operator-key")
            #expect(wrong.status != 0 && wrong.stderr.contains("not the operator key"), "\(wrong.stderr)")
        }
    }

    @Test("feeds on the operator's command line: made, items added in order (a second feed of one ID and an asset twice refused with the reason), listed with their counts and items; an item number past the documented length is refused")
    func feeds() async throws {
        let world = try await World("backplane-feeds")
        defer { world.server.stop() }
        try await TestMedia.offloaded {
            let made = try world.backplane(["feeds", "create", "news", "--title", "Evening news"])
            #expect(made.status == 0 && made.stdout.contains("made feed news: Evening news"), "\(made.stderr)")
            let again = try world.backplane(["feeds", "create", "news", "--title", "Again"])
            #expect(again.status != 0 && again.stderr.contains("exists already"), "\(again.stderr)")
            for (asset, day) in [("monday", "2026-11-23"), ("tuesday", "2026-11-24")] {
                let added = try world.backplane(["feeds", "add-item", "news", "--asset-id", asset, "--url", "https://cdn.example/\(asset)/master.m3u8",
                                                 "--title", asset.capitalized, "--published", day])
                #expect(added.status == 0, "\(added.stderr)")
            }
            let twice = try world.backplane(["feeds", "add-item", "news", "--asset-id", "monday", "--url", "https://cdn.example/x.m3u8"])
            #expect(twice.status != 0 && twice.stderr.contains("offers monday already"), "\(twice.stderr)")
            let notURL = try world.backplane(["feeds", "add-item", "news", "--asset-id", "x", "--url", "file:///etc/passwd"])
            #expect(notURL.status != 0 && notURL.stderr.contains("http or https URL"), "\(notURL.stderr)")
            #expect(try world.backplane(["feeds", "list"]).stdout.contains("news\t2 items\tEvening news"))
            let items = try world.backplane(["feeds", "items", "news", "--json"])
            let array = try #require(try JSONSerialization.jsonObject(with: Data(items.stdout.utf8)) as? [[String: Any]], "\(items.stderr)")
            #expect(array.map { $0["assetID"] as? String } == ["monday", "tuesday"] && array.map { $0["sequence"] as? Int } == [1, 2])
            let unknown = try world.backplane(["feeds", "items", "sports"])
            #expect(unknown.status != 0 && unknown.stderr.contains("no feed sports"), "\(unknown.stderr)")
            // `after` as an item's number, and past the documented length (zeros in front): 400, as schemathesis expects.
            let key = try String(contentsOfFile: world.key, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            for (after, status) in [("1", "200"), (String(repeating: "0", count: 5000), "400")] {
                let answer = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer \(key)",
                                                                                          world.server.url + "/backplane/operator/feeds/news/items?after=" + after])
                #expect(answer.stdout == status, "after of \(after.count) characters: \(answer.stdout)")
            }
        }
    }

    private func server(_ world: World, key: String) -> CLIRunner.Result {
        let file = world.server.directory.appendingPathComponent("wrong.key").path
        try? key.write(toFile: file, atomically: true, encoding: .utf8)
        return (try? CLIRunner.run(["backplane", "users", "list", "--server", world.server.url, "--operator-key-file", file]))
            ?? CLIRunner.Result(status: -1, stdout: "", stderr: "")
    }
}

/// A `satchel` process (or another program) whose stdout lines are collected as they come.
final class LineReader: @unchecked Sendable {
    private let process = Process()
    private let output = Pipe()
    private let errors = Pipe()
    private let collected = Locked<[String]>([])

    init(_ arguments: [String], program: URL? = nil) throws {
        let built = try #require(CLIRunner.binary, "the satchel binary was not built")
        process.executableURL = program ?? built
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let handle = output.fileHandleForReading, collected = collected
        Thread.detachNewThread {
            var line = [UInt8]()
            while case let chunk = handle.availableData, !chunk.isEmpty {  // what has come (read(upToCount:) waits for the whole count)
                for byte in chunk {
                    if byte == UInt8(ascii: "\n") {
                        let text = String(decoding: line, as: UTF8.self)
                        collected.withLock { $0.append(text) }
                        line = []
                    } else {
                        line.append(byte)
                    }
                }
            }
        }
    }

    var lines: [String] { collected.current }

    /// The process's ID.
    var pid: Int32 { process.processIdentifier }

    /// Waits until a line containing `text` has come (true), or `seconds` pass (false).
    func wait(for text: String, seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if lines.contains(where: { $0.contains(text) }) { return true }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return lines.contains { $0.contains(text) }
    }

    /// The exit status once the process ends within `seconds` (nil: still running).
    func waitForExit(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        return process.isRunning ? nil : process.terminationStatus
    }

    var stderr: String { String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self) }

    /// Kills the process at once (SIGKILL): nothing it would do on the way out is done.
    func vanish() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// Interrupts the process (satchel stops on SIGINT, closing its sessions and recording them); one still running ten
    /// seconds later is killed (a program started from a test may have inherited the test's blocked signals).
    func stop() {
        guard process.isRunning else { return }
        process.interrupt()
        if waitForExit(seconds: 10) == nil { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
