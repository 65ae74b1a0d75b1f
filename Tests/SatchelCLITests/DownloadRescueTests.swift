import Foundation
import SatchelTestSupport
import Testing

/// A download rescued in place: its entitlement token expired (issue 53 §5), its run interrupted (§6).
@Suite(.serialized) struct DownloadRescueTests {
    @Test("an asset added with --license and a token that has expired is blocked with invalid-entitlement and the way out said; download update-token --token-file gives it a fresh one and it completes; an asset added without --license is told it has no token")
    func expiredToken() async throws {
        let world = try await BackplaneCommandTests.World("download-token")
        defer { world.server.stop() }
        let origin = try await BackplaneCommandTests.origin(world)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            let device = try world.device("phone")
            let expired = try AgentCommandTests.satchel(["token", "--jwks", world.server.jwks.path, "--kid", "backend", "--sub", "user-42", "--asset", "*",
                                                         "--persistent", "--ttl", "60"], faketime: "-1h").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let stale = world.server.directory.appendingPathComponent("stale.txt").path
            try expired.write(toFile: stale, atomically: true, encoding: .utf8)
            let added = try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "clip", "--license", "--token-file", stale, "--data-dir", device.directory])
            #expect(added.status == 0, "\(added.stderr)")
            let blocked = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            #expect(blocked.stderr.contains("invalid-entitlement") && blocked.stderr.contains("satchel download update-token clip --token-file FILE"), "\(blocked.stderr)")
            #expect(!blocked.stderr.contains(expired), "the token is never printed")

            let fresh = world.server.directory.appendingPathComponent("fresh.txt").path
            try world.server.token().write(toFile: fresh, atomically: true, encoding: .utf8)
            let updated = try CLIRunner.run(["download", "update-token", "clip", "--token-file", fresh, "--data-dir", device.directory])
            #expect(updated.status == 0 && updated.stdout.contains("queued again"), "\(updated.stderr)")
            let ran = try CLIRunner.run(["download", "run", "--data-dir", device.directory])
            let state = try BackplaneCommandTests.listJSON(device.directory).first { $0["id"] as? String == "clip" }?["state"] as? String
            #expect(ran.status == 0 && state == "complete", "\(ran.stderr)")
            #expect(try CLIRunner.run(["rights", "clip", "--data-dir", device.directory, "--json"]).stdout.contains("\"valid\""), "its license came with the fresh token")

            #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "plain", "--data-dir", device.directory]).status == 0)
            let none = try CLIRunner.run(["download", "update-token", "plain", "--token-file", fresh, "--data-dir", device.directory])
            #expect(none.status != 0 && none.stderr.contains("added without a license request"), "\(none.stderr)")
        }
    }

    @Test("Ctrl-C during download run stops it and says so; what was downloading is listed queued (not downloading), and the next run finishes it from its bytes")
    func interrupted() async throws {
        let world = try await BackplaneCommandTests.World("download-interrupted")
        defer { world.server.stop() }
        let origin = try await BackplaneCommandTests.origin(world)
        defer { origin.stop() }
        origin.setThrottle(chunk: 1024, microseconds: 50_000)  // about 20 KB/s, 5 s for the file: the run is still downloading when stopped, however loaded the machine
        let directory = world.server.directory.appendingPathComponent("phone").path
        try await TestMedia.offloaded {
            #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", "clip", "--data-dir", directory]).status == 0)
            let run = try LineReader(["download", "run", "--data-dir", directory])
            defer { run.vanish() }
            var state: String?
            for _ in 0..<200 where state != "downloading" {
                Thread.sleep(forTimeInterval: 0.05)
                state = try BackplaneCommandTests.listJSON(directory).first?["state"] as? String
            }
            #expect(state == "downloading")
            run.stop()
            let said = run.stderr
            #expect(said.contains("satchel: stopped;") && said.contains("`satchel download run` picks it up again"), "\(said)")
            let listed = try BackplaneCommandTests.listJSON(directory).first
            #expect(listed?["state"] as? String == "queued", "\(String(describing: listed))")
            origin.setThrottle(chunk: 64 * 1024, microseconds: 0)
            let again = try CLIRunner.run(["download", "run", "--data-dir", directory])
            let finished = try BackplaneCommandTests.listJSON(directory).first?["state"] as? String
            #expect(again.status == 0 && finished == "complete", "\(again.stderr)")
        }
    }
}
