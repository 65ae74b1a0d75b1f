import Foundation
import SatchelTestSupport
import Testing

/// Limits that fail closed: the server enforces the download limits where it issues a persistent license, and a device
/// that cannot ask for a stream slot does not start a stream, unless its license allows offline play.
@Suite(.serialized) struct FailClosedLimitsTests {
    @Test("a persistent license takes the device's download permission on the server: a device whose downloads are disabled, and a second asset past --max-downloads 1, get none (an online license still comes)")
    func persistentLicensesTakePermission() async throws {
        let world = try await BackplaneCommandTests.World("fail-closed-licenses")
        defer { world.server.stop() }
        try await TestMedia.offloaded {
            try world.server.importKeys("clip", key: "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf", kid: "10112233445566778899aabbccddeeff", ["--offline"])
            #expect(try world.backplane(["limits", "set", "--max-devices", "1", "--max-downloads", "1"]).status == 0)
            let first = try world.device("first"), second = try world.device("second")
            #expect(second.stderr.contains("device-limit-reached"), "\(second.stderr)")
            let token = try world.server.token()
            func acquire(_ device: String, _ asset: String, persistent: Bool = true) throws -> CLIRunner.Result {
                try CLIRunner.run(["license", "acquire", asset, "--data-dir", device, "--token", token] + (persistent ? ["--persistent"] : []))
            }
            let disabled = try acquire(second.directory, "movie")
            #expect(disabled.status != 0 && disabled.stderr.contains("device-not-enabled"), "\(disabled.stderr)")
            #expect(try acquire(second.directory, "movie", persistent: false).status == 0, "an online license is not a download")
            let kept = try acquire(first.directory, "movie")
            #expect(kept.status == 0, "\(kept.stderr)")
            #expect(try acquire(first.directory, "movie").status == 0, "the same asset again: its grant is held already")
            let past = try acquire(first.directory, "clip")
            #expect(past.status != 0 && past.stderr.contains("account-download-limit"), "\(past.stderr)")
        }
    }

    @Test("a registered device that cannot reach its backplane starts no stream of a download without an offline license; one whose license allows offline play does")
    func slotServiceUnreachable() async throws {
        let world = try await BackplaneCommandTests.World("fail-closed-slots")
        let origin = try await BackplaneCommandTests.origin(world)
        defer { origin.stop() }
        let device = try await TestMedia.offloaded { () throws -> String in
            let device = try world.device("phone")
            // The same file twice: as "clip" (no license) and as "movie" (a persistent license, offline use allowed).
            for id in ["clip", "movie"] {
                #expect(try CLIRunner.run(["download", "add", origin.url("clip.mp4"), "--id", id, "--data-dir", device.directory]).status == 0)
            }
            #expect(try CLIRunner.run(["download", "run", "--data-dir", device.directory]).status == 0)
            #expect(try CLIRunner.run(["license", "acquire", "movie", "--data-dir", device.directory, "--token", try world.server.token(), "--persistent"]).status == 0)
            return device.directory
        }
        world.server.stop()
        try await TestMedia.offloaded {
            let refused = try CLIRunner.run(["play", "clip", "--data-dir", device, "--exec", "true"])
            #expect(refused.status != 0 && refused.stderr.contains("no stream slot: the stream-slot service cannot be asked") && refused.stdout.isEmpty, "\(refused.stderr)")
            let offline = try CLIRunner.run(["play", "movie", "--data-dir", device, "--exec", "true"])
            #expect(offline.status == 0, "its license allows offline play: \(offline.stderr)")
        }
    }
}
