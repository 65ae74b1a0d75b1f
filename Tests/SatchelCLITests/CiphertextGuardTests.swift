import Foundation
import SatchelTestSupport
import Testing

/// No ciphertext is ever handed to a player as media (issue 50): protection the proxy cannot make clear is refused by
/// name, whatever the path the file came by.
@Suite(.serialized) struct CiphertextGuardTests {
    @Test("an MP4 that ffmpeg encrypted (cenc-aes-ctr, its moov after its media, not in fragments), played from disk, online or downloaded, is refused with unsupported-protection naming its encrypted tracks; no session URL is printed and no player runs; its clear source plays")
    func progressiveCencRefused() async throws {
        try TestMedia.require("ffmpeg")
        let dir = try TestMedia.temporaryDirectory("ciphertext-guard")
        let site = dir.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let clip = try await TestMedia.offloaded { try TestMedia.make("ciphertext-guard", seconds: 2) }
        let locked = site.appendingPathComponent("locked.mp4")
        _ = try await TestMedia.offloaded {
            try TestMedia.run("ffmpeg", ["-v", "error", "-y", "-i", clip.path, "-c", "copy", "-encryption_scheme", "cenc-aes-ctr",
                                         "-encryption_key", "00112233445566778899aabbccddeeff", "-encryption_kid", "0123456789abcdef0123456789abcdef", locked.path])
        }
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            let data = dir.appendingPathComponent("device").path
            let marker = dir.appendingPathComponent("player-ran").path
            #expect(try CLIRunner.run(["download", "add", origin.url("locked.mp4"), "--id", "locked", "--data-dir", data]).status == 0)
            #expect(try CLIRunner.run(["download", "run", "--data-dir", data]).status == 0)
            for source in [locked.path, origin.url("locked.mp4"), "locked"] {
                let played = try CLIRunner.run(["play", source, "--data-dir", data, "--exec", "touch \(marker)"])
                #expect(played.status != 0 && played.stderr.contains("unsupported-protection") && played.stderr.contains("encv/cenc"), "\(source): \(played.stderr)")
                #expect(!played.stdout.contains("http://127.0.0.1"), "\(source): no session: \(played.stdout)")
                #expect(!FileManager.default.fileExists(atPath: marker), "\(source): no player ran")
            }
            let clear = try CLIRunner.run(["play", clip.path, "--data-dir", data, "--exec", "touch \(marker)"])
            #expect(clear.status == 0 && FileManager.default.fileExists(atPath: marker), "\(clear.stderr)")
        }
    }
}
