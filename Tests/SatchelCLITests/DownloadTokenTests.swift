import Foundation
import SatchelTestSupport
import Testing

/// A queued download whose entitlement token expired is rescued in place (issue 53 §5).
@Suite(.serialized) struct DownloadTokenTests {
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
}
