import Foundation
import SatchelDevice
import SatchelRights
import SatchelBytes
import SatchelTestSupport
import Testing

/// The device agent through the `satchel` binary against a real `satchel serve` on loopback: registration,
/// licenses with rights, use, renewal, release (also while the server is down), keys bound to the device,
/// and the secure clock under `faketime`.
@Suite(.serialized) struct AgentCommandTests {
    /// A license server in its own process, with two assets: "movie" (offline, a 1-hour rental, an end date a
    /// day ahead) and "clip" (offline, no dates at all).
    final class Server: @unchecked Sendable {
        let directory: URL
        /// The port the first start listened on; a restart listens on it again.
        private(set) var port = 0
        var process: Process?
        /// More `satchel serve` arguments (FairPlay credentials).
        var serveArguments: [String] = []
        /// Run at the lowest priority (a load test: the tests beside it keep their share of the cores).
        var lowPriority = false
        let jwks: URL
        let contentKey = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"

        /// A server with its keys imported (by `satchel keys import`), waiting for them on this thread: for code on a
        /// thread of its own.
        convenience init(_ name: String, future: Bool = false) throws {
            try self.init(folder: name)
            try importAll(future: future)
        }

        /// A server with its keys imported, the commands run on a thread of their own (no thread of the task pool,
        /// which the servers of the test process need, waits for them).
        convenience init(_ name: String, future: Bool = false) async throws {
            try self.init(folder: name)
            try await TestMedia.offloaded { try self.importAll(future: future) }
        }

        private init(folder name: String) throws {
            directory = try TestMedia.temporaryDirectory("agent-\(name)")
            jwks = directory.appendingPathComponent("jwks.json")
            try #"{"keys":[{"kty":"oct","kid":"backend","k":"c2F0Y2hlbC1leGFtcGxlLXNlY3JldC1vZi0zMi1ieXRlcyE"}]}"#
                .write(to: jwks, atomically: true, encoding: .utf8)
        }

        private func importAll(future: Bool) throws {
            let day = ISO8601DateFormatter().string(from: Date().addingTimeInterval(86_400))
            try importKeys("movie", key: contentKey, kid: "7c3e9a14b2d05f6e8a1c4d7b2e9f0a63",
                           ["--offline", "--rental-seconds", "3600", "--renewal-seconds", "1800", "--not-after", day])
            try importKeys("clip", key: "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf", kid: "10112233445566778899aabbccddeeff", ["--offline"])
            try importKeys("online", key: "c0c1c2c3c4c5c6c7c8c9cacbcccdcecf", kid: "20112233445566778899aabbccddeeff", [])
            if future {
                let start = ISO8601DateFormatter().string(from: Date().addingTimeInterval(7 * 86_400))
                try importKeys("premiere", key: "d0d1d2d3d4d5d6d7d8d9dadbdcdddedf", kid: "30112233445566778899aabbccddeeff",
                               ["--offline", "--not-before", start])
            }
        }

        var data: String { directory.appendingPathComponent("server").path }
        var url: String { "http://127.0.0.1:\(port)" }

        func importKeys(_ asset: String, key: String, kid: String, _ policy: [String]) throws {
            let file = directory.appendingPathComponent("\(asset)-keys.json")
            try #"{"scheme":"cenc","keys":[{"keyId":"\#(kid)","key":"\#(key)","iv":"00000000000000000000000000000001","firstSegment":0}]}"#
                .write(to: file, atomically: true, encoding: .utf8)
            let result = try CLIRunner.run(["keys", "import", file.path, "--asset-id", asset, "--data-dir", data] + policy)
            #expect(result.status == 0, "\(result.stderr)")
        }

        /// ``token(persistent:subject:asset:)`` made on a thread of its own.
        func token(persistent: Bool = true, subject: String = "user-42", asset: String = "*") async throws -> String {
            try await TestMedia.offloaded { try self.token(persistent: persistent, subject: subject, asset: asset) }
        }

        /// A signed entitlement token for `subject` (by `satchel token`), made on this thread.
        func token(persistent: Bool = true, subject: String = "user-42", asset: String = "*") throws -> String {
            let made = try CLIRunner.run(["token", "--jwks", jwks.path, "--kid", "backend", "--sub", subject, "--asset", asset, "--ttl", "600"]
                                         + (persistent ? ["--persistent"] : []))
            #expect(made.status == 0, "\(made.stderr)")
            return made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }

        /// Starts `satchel serve` and waits for the address it prints once bound; throws if it exits first. The
        /// first start picks a port outside the system's ephemeral range (``RestartablePort``), and picks again
        /// if another process took it first; a restart listens on the same port.
        func start() async throws {
            guard port == 0 else { return try await listen(on: port) }
            for attempt in 1...5 {
                do {
                    return try await listen(on: RestartablePort.pick())
                } catch is NotListening where attempt < 5 {
                    continue
                }
            }
        }

        private func listen(on chosen: Int) async throws {
            let process = Process()
            let arguments = ["serve", "--data-dir", data, "--jwks", jwks.path, "--port", String(chosen)] + serveArguments
            if lowPriority, let binary = CLIRunner.binary {  // nice execs the server: the process is the server's
                process.executableURL = URL(fileURLWithPath: "/usr/bin/nice")
                process.arguments = ["-n", "19", binary.path] + arguments
            } else {
                process.executableURL = CLIRunner.binary
                process.arguments = arguments
            }
            process.standardError = FileHandle.nullDevice
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            self.process = process
            guard let bound = try await TestMedia.offloaded({ ListeningLine.port(from: output) }) else {
                stop()
                throw NotListening()
            }
            port = bound
        }

        /// `satchel serve` exited (a bad argument, a port taken on a restart) before it printed its address.
        struct NotListening: Error {}

        func stop() {
            process?.terminate()
            process?.waitUntilExit()
            process = nil
        }

        deinit { stop() }
    }

    /// ``satchel(_:faketime:)`` from a task, waited for on a thread of its own.
    static func satchel(_ arguments: [String], faketime offset: String? = nil) async throws -> CLIRunner.Result {
        try await TestMedia.offloaded { try satchel(arguments, faketime: offset) }
    }

    /// Runs `satchel` (under `faketime` with `offset`), waiting on this thread.
    static func satchel(_ arguments: [String], faketime offset: String? = nil) throws -> CLIRunner.Result {
        guard let offset else { return try CLIRunner.run(arguments) }
        let binary = try #require(CLIRunner.binary)
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/faketime"), ["-f", offset, binary.path] + arguments)
        return CLIRunner.Result(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("register, acquire, list, use, renew, release over HTTP; the store holds no content key; the server lists the licenses")
    func lifecycle() async throws {
        let server = try await Server("lifecycle")
        try await server.start()
        defer { server.stop() }
        let device = server.directory.appendingPathComponent("device").path
        let token = try await server.token()
        try await TestMedia.offloaded {
            let registered = try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device, "--name", "laptop"])
            #expect(registered.status == 0, "\(registered.stderr)")
            let id = registered.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(id.count == 36)
            let again = try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device])
            #expect(again.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id, "the device ID is stable")
            let mode = try FileManager.default.attributesOfItem(atPath: device + "/device-key.pem")[.posixPermissions] as? Int
            #expect(mode == 0o600)

            let acquired = try Self.satchel(["license", "acquire", "movie", "--server", server.url, "--token", token, "--data-dir", device, "--persistent"])
            #expect(acquired.status == 0 && acquired.stdout.contains("valid, persistent"), "\(acquired.stderr)")
            let rights = try Self.json(try Self.satchel(["rights", "movie", "--data-dir", device, "--json"]).stdout)
            #expect(rights["status"] as? String == "valid" && rights["persistent"] as? Bool == true && rights["validitySeconds"] as? Int == 3600)
            #expect(rights["end"] != nil && rights["expireAfterFirstUse"] as? Bool == false)
            let list = try Self.satchel(["license", "list", "--data-dir", device, "--json"])
            #expect(list.stdout.contains("7c3e9a14b2d05f6e8a1c4d7b2e9f0a63") && !list.stdout.contains(server.contentKey))
            let used = try Self.satchel(["license", "use", "movie", "--data-dir", device])
            #expect(used.status == 0 && used.stdout.contains("1 key ready") && !used.stdout.contains(server.contentKey), "\(used.stderr)")
            let renewed = try Self.satchel(["license", "renew", "movie", "--data-dir", device, "--token", token])
            #expect(renewed.status == 0 && renewed.stdout.contains("renewed"), "\(renewed.stderr)")
            let store = try Data(contentsOf: URL(fileURLWithPath: device + "/agent.sqlite"))
            for needle in [Data(server.contentKey.utf8), Data(try Hex.decode(server.contentKey))] {
                #expect(store.range(of: needle) == nil, "the store file holds a content key")
            }
            var issued = try Self.satchel(["licenses", "--data-dir", server.data])
            #expect(issued.stdout.contains("\tmovie\trenewed\tpersistent") && issued.stdout.contains(id), "\(issued.stdout)")

            let none = try Self.satchel(["rights", "clip", "--data-dir", device, "--json"])
            let noneStatus = try Self.json(none.stdout)["status"] as? String
            #expect(none.status != 0 && noneStatus == "no-rights")
            let refused = try Self.satchel(["license", "use", "clip", "--data-dir", device])
            #expect(refused.status != 0 && refused.stderr.contains("no-rights"))

            let released = try Self.satchel(["license", "release", "movie", "--data-dir", device])
            #expect(released.status == 0 && released.stdout.contains("license released"), "\(released.stderr)")
            #expect(try Self.satchel(["rights", "movie", "--data-dir", device]).status != 0)
            issued = try Self.satchel(["licenses", "--data-dir", server.data, "--json"])
            #expect(issued.stdout.contains("\"released\""))
        }
    }

    @Test("custom data from license acquire --custom-data reaches the server's policy hook, which narrows or refuses; satchel licenses --json shows it")
    func customData() async throws {
        let hook = await TestPolicyHook()
        defer { hook.stop() }
        let server = try await Server("custom-data")
        server.serveArguments = ["--policy-hook", hook.url, "--policy-hook-timeout", "30"]  // the hook runs in this (loaded) process
        try await server.start()
        defer { server.stop() }
        let device = server.directory.appendingPathComponent("device").path
        let token = try await server.token()
        try await TestMedia.offloaded {
            #expect(try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device]).status == 0)
            let basic = try Self.satchel(["license", "acquire", "movie", "--token", token, "--data-dir", device, "--custom-data", "<plan>basic</plan>"])
            #expect(basic.status == 0, "\(basic.stderr)")
            let rights = try Self.json(try Self.satchel(["rights", "movie", "--data-dir", device, "--json"]).stdout)
            #expect(rights["validitySeconds"] as? Int == 60, "the hook's 60 s rental replaces the asset's hour: \(rights)")
            let refused = try Self.satchel(["license", "acquire", "clip", "--token", token, "--data-dir", device, "--custom-data", "<plan>none</plan>"])
            #expect(refused.status != 0 && refused.stderr.contains("not in your plan"), "\(refused.stderr)")
            let plain = try Self.satchel(["license", "acquire", "clip", "--token", token, "--data-dir", device])
            #expect(plain.status == 0, "\(plain.stderr)")
            let listed = try #require(try JSONSerialization.jsonObject(with: Data(Self.satchel(["licenses", "--data-dir", server.data, "--json"]).stdout.utf8))
                as? [[String: Any]])
            #expect(listed.first { $0["assetID"] as? String == "movie" }?["customData"] as? String == "<plan>basic</plan>", "\(listed)")
            #expect(listed.first { $0["assetID"] as? String == "clip" }?["customData"] == nil)
            #expect(listed.count == 2, "the refused license was not issued")
        }
        #expect(hook.questions.map(\.type) == ["satchel", "satchel", "satchel"])
        #expect(hook.questions.map(\.customData) == ["<plan>basic</plan>", "<plan>none</plan>", nil])
    }

    @Test("a persistent license needs the asset's --offline and the token's persistent; a license before its start is in-future")
    func offlineRuleAndStart() async throws {
        let server = try await Server("rules", future: true)
        try await server.start()
        defer { server.stop() }
        let device = server.directory.appendingPathComponent("device").path
        try await TestMedia.offloaded {
            let token = try server.token(), streaming = try server.token(persistent: false)
            _ = try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device])
            let notOffline = try Self.satchel(["license", "acquire", "online", "--token", token, "--data-dir", device, "--persistent"])
            #expect(notOffline.status != 0 && notOffline.stderr.contains("policy-denied"), "\(notOffline.stderr)")
            let notPersistentToken = try Self.satchel(["license", "acquire", "clip", "--token", streaming, "--data-dir", device, "--persistent"])
            #expect(notPersistentToken.status != 0 && notPersistentToken.stderr.contains("not-entitled"), "\(notPersistentToken.stderr)")
            let streamingLicense = try Self.satchel(["license", "acquire", "clip", "--token", streaming, "--data-dir", device])
            #expect(streamingLicense.status == 0 && !streamingLicense.stdout.contains("persistent"), "\(streamingLicense.stderr)")
            let early = try Self.satchel(["license", "acquire", "premiere", "--token", token, "--data-dir", device, "--persistent"])
            #expect(early.status == 0 && early.stdout.contains("in-future"), "\(early.stderr)")
            let rights = try Self.satchel(["rights", "premiere", "--data-dir", device, "--json"])
            let start = try Self.json(rights.stdout)["start"]
            #expect(rights.status != 0 && start != nil)
            let otherUser = try server.token(subject: "someone-else")
            let foreign = try Self.satchel(["license", "acquire", "clip", "--token", otherUser, "--data-dir", device])
            #expect(foreign.status != 0 && foreign.stderr.contains("registered to another user"), "\(foreign.stderr)")
        }
    }

    @Test("a license store copied to another device yields no keys; a release owed while the server is down is delivered when it returns")
    func boundToTheDeviceAndOwedRelease() async throws {
        let server = try await Server("owed")
        try await server.start()
        defer { server.stop() }
        let first = server.directory.appendingPathComponent("first").path, second = server.directory.appendingPathComponent("second").path
        try await TestMedia.offloaded {
            let token = try server.token()
            for device in [first, second] {
                #expect(try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device]).status == 0)
            }
            #expect(try Self.satchel(["license", "acquire", "clip", "--token", token, "--data-dir", first, "--persistent"]).status == 0)
            try FileManager.default.removeItem(atPath: second + "/agent.sqlite")
            try FileManager.default.copyItem(atPath: first + "/agent.sqlite", toPath: second + "/agent.sqlite")
            // The copied store's sealed state does not open with this device's key: nothing in it is believed.
            let stolen = try Self.satchel(["license", "use", "clip", "--data-dir", second])
            #expect(stolen.status != 0 && stolen.stderr.contains("changed outside Satchel"), "\(stolen.stderr)")
            #expect(try Self.satchel(["license", "use", "clip", "--data-dir", first]).status == 0)
        }
        server.stop()
        try await TestMedia.offloaded {
            let released = try Self.satchel(["license", "release", "clip", "--data-dir", first])
            #expect(released.status == 0 && released.stdout.contains("owed"), "\(released.stderr)")
            let list = try Self.json("{\"l\":" + (try Self.satchel(["license", "list", "--data-dir", first, "--json"]).stdout) + "}")
            let rows = try #require(list["l"] as? [[String: Any]])
            #expect(rows.count == 1 && rows.first?["pendingRelease"] as? Bool == true)
            #expect(try Self.satchel(["license", "use", "clip", "--data-dir", first]).status != 0, "deleted locally at once")
        }
        try await server.start()
        try await TestMedia.offloaded {
            let synced = try Self.satchel(["license", "sync", "--data-dir", first])
            #expect(synced.status == 0 && synced.stdout.contains("releases delivered 1, still owed 0"), "\(synced.stdout) \(synced.stderr)")
            #expect(try Self.satchel(["licenses", "--data-dir", server.data]).stdout.contains("\tclip\treleased"))
        }
    }

    @Test("the DRM store reset (seed 000 §4.3): every license removed at once, offline; their releases owed, listed as pending, and delivered at the next sync, which the server records")
    func reset() async throws {
        let server = try await Server("reset")
        try await server.start()
        defer { server.stop() }
        let device = server.directory.appendingPathComponent("device").path
        try await TestMedia.offloaded {
            let token = try server.token()
            #expect(try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device]).status == 0)
            for asset in ["clip", "movie"] {
                #expect(try Self.satchel(["license", "acquire", asset, "--token", token, "--data-dir", device, "--persistent"]).status == 0)
            }
        }
        server.stop()
        try await TestMedia.offloaded {
            let reset = try Self.satchel(["license", "reset", "--data-dir", device])
            #expect(reset.status == 0 && reset.stdout.contains("removed 2 licenses (clip, movie)"), "\(reset.stdout) \(reset.stderr)")
            for asset in ["clip", "movie"] { #expect(try Self.satchel(["license", "use", asset, "--data-dir", device]).status != 0, "\(asset) is gone") }
            let list = try Self.json("{\"l\":" + (try Self.satchel(["license", "list", "--data-dir", device, "--json"]).stdout) + "}")
            let rows = try #require(list["l"] as? [[String: Any]])
            #expect(rows.count == 2 && rows.allSatisfy { $0["pendingRelease"] as? Bool == true }, "\(rows)")
            #expect(try Self.satchel(["license", "reset", "--data-dir", device]).stdout.contains("no licenses to remove"))
        }
        try await server.start()
        try await TestMedia.offloaded {
            let synced = try Self.satchel(["license", "sync", "--data-dir", device])
            #expect(synced.status == 0 && synced.stdout.contains("releases delivered 2, still owed 0"), "\(synced.stdout) \(synced.stderr)")
            let licenses = try Self.satchel(["licenses", "--data-dir", server.data]).stdout
            #expect(licenses.contains("\tclip\treleased") && licenses.contains("\tmovie\treleased"), "\(licenses)")
        }
    }

    @Test("the secure clock under faketime: forward past the end is expired; back two days, offline, is untrusted for dated rights only, and stays so when the wall clock comes back; once the license server can be reached, any use restores trust by itself (seed 000 §5.4.2), no sync needed")
    func secureClock() async throws {
        let server = try await Server("clock")
        try await server.start()
        defer { server.stop() }
        let device = server.directory.appendingPathComponent("device").path
        @Sendable func status(_ asset: String, _ offset: String?) throws -> String? {
            try Self.json(try Self.satchel(["rights", asset, "--data-dir", device, "--json"], faketime: offset).stdout)["status"] as? String
        }
        try await TestMedia.offloaded {
            let token = try server.token()
            _ = try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device])
            #expect(try Self.satchel(["license", "acquire", "movie", "--token", token, "--data-dir", device, "--persistent"]).status == 0)
            #expect(try Self.satchel(["license", "acquire", "clip", "--token", token, "--data-dir", device, "--persistent"]).status == 0)
            #expect(try status("movie", nil) == "valid")
            #expect(try status("movie", "+2d") == "expired")
        }
        server.stop()
        try await TestMedia.offloaded {
            let back = try Self.satchel(["rights", "movie", "--data-dir", device, "--json"], faketime: "-2d")
            let backStatus = try Self.json(back.stdout)["status"] as? String
            #expect(backStatus == "untrusted-time")
            #expect(back.stderr.contains("event: untrusted-time"), "the rollback is reported: \(back.stderr)")
            #expect(try status("clip", "-2d") == "valid", "rights without dates stay valid")
            #expect(try Self.satchel(["license", "use", "movie", "--data-dir", device], faketime: "-2d").stderr.contains("untrusted-time"))
            #expect(try status("movie", nil) == "untrusted-time", "the wall clock coming back is not enough")
        }
        try await server.start()
        try await TestMedia.offloaded {
            // No sync: the use itself fetches the server's signed time, once the server answers.
            let restored = try Self.satchel(["rights", "movie", "--data-dir", device, "--json"])
            #expect(try Self.json(restored.stdout)["status"] as? String == "valid", "\(restored.stdout) \(restored.stderr)")
            #expect(restored.stderr.contains("event: trust-restored"), "\(restored.stderr)")
            // A wall clock that disagrees with the server's time by days is still a rollback (PlayReady's rule: only a
            // clock that agrees with the server is trusted again).
            #expect(try status("movie", "-2d") == "untrusted-time")
        }
    }

    @Test("the download engine's license step: --license acquires a persistent license as the download starts, renews it when it finishes past its renewal interval, a refusal is a license failure, remove releases it")
    func downloadLicenseStep() async throws {
        let server = try await Server("download")
        try await server.start()
        defer { server.stop() }
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let input = try await TestMedia.offloaded { try TestMedia.make("agent-download", seconds: 2) }
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        let data = server.directory.appendingPathComponent("downloads").path
        try await TestMedia.offloaded {
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("movie").path, "--format", "hls-ts"]).status == 0)
            let token = try server.token(), streaming = try server.token(persistent: false)
            #expect(try Self.satchel(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            let added = try Self.satchel(["download", "add", origin.url("movie/master.m3u8"), "--data-dir", data, "--id", "movie",
                                          "--license", "--token", token])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(try Self.satchel(["rights", "movie", "--data-dir", data]).status != 0, "no license before the download starts")
            #expect(try Self.satchel(["licenses", "--data-dir", server.data]).stdout.isEmpty)
            // The run's clock is 40 minutes ahead: the 1-hour rental is past its renewal interval (30 min) when the download finishes.
            let run = try Self.satchel(["download", "run", "--data-dir", data], faketime: "+40m")
            #expect(run.status == 0 && !run.stdout.contains(token) && !run.stderr.contains(token), "\(run.stderr)")
            // (Read on the same clock: back at real time, 40 minutes behind what the agent has seen, its clock is rolled back.)
            let rights = try Self.json(try Self.satchel(["rights", "movie", "--data-dir", data, "--json"], faketime: "+40m").stdout)
            #expect(rights["status"] as? String == "valid" && rights["persistent"] as? Bool == true)
            #expect(try Self.satchel(["licenses", "--data-dir", server.data]).stdout.contains("\tmovie\trenewed"), "renewed when the download finished")

            // A token without persistent: true gets no offline license: the download fails with the server's reason, not retried.
            let refused = try Self.satchel(["download", "add", origin.url("movie/master.m3u8"), "--data-dir", data, "--id", "clip",
                                            "--license", "--token", streaming])
            #expect(refused.status == 0)
            let failedRun = try Self.satchel(["download", "run", "--data-dir", data])
            #expect(failedRun.status == 1, "\(failedRun.stdout) \(failedRun.stderr)")
            let list = try Self.satchel(["download", "list", "--data-dir", data])
            #expect(list.stdout.contains("license (not-entitled)") && !list.stdout.contains(streaming), "\(list.stdout)")

            #expect(try Self.satchel(["download", "remove", "movie", "--data-dir", data]).status == 0)
            #expect(try Self.satchel(["rights", "movie", "--data-dir", data]).status != 0)
            #expect(try Self.satchel(["licenses", "--data-dir", server.data]).stdout.contains("\tmovie\treleased"))
        }
    }
}
