import Foundation
import SatchelTestSupport
import Testing

@Suite("satchel package")
struct PackageCommandTests {
    @Test("packages every scheme with a one-line summary; errors are one line with a non-zero exit")
    func package() async throws {
        try await TestMedia.offloaded {
            let input = try TestMedia.make("cli-package", seconds: 4)
            let dir = try TestMedia.temporaryDirectory("cli-package")
            for (format, scheme) in [("hls-ts", "clear"), ("hls-ts", "aes-128"), ("hls-ts", "sample-aes"), ("cmaf", "cbcs"), ("cmaf", "cenc")] {
                let out = dir.appendingPathComponent("\(format)-\(scheme)").path
                var arguments = ["package", input.path, "--out", out, "--format", format, "--scheme", scheme, "--segment-duration", "2",
                                 "--key-id", "0123456789abcdef0123456789abcdef", "--key", "00112233445566778899aabbccddeeff"]
                if scheme == "sample-aes" || scheme == "cbcs" { arguments += ["--fairplay-uri", "skd://movie"] }
                let result = try CLIRunner.run(arguments)
                #expect(result.status == 0, "\(format) \(scheme): \(result.stderr)")
                #expect(result.stdout.hasPrefix("packaged ") && result.stdout.split(separator: "\n").count == 1)
                #expect(!result.stdout.contains("00112233445566778899aabbccddeeff"), "the key is never printed")
                #expect(FileManager.default.fileExists(atPath: out + "/master.m3u8"))
                #expect(FileManager.default.fileExists(atPath: out + "/manifest.mpd") == (format == "cmaf"))
            }
            let bad = try CLIRunner.run(["package", "/nonexistent.mp4", "--out", dir.appendingPathComponent("x").path, "--format", "cmaf", "--scheme", "cenc"])
            #expect(bad.status != 0 && bad.stderr.hasPrefix("satchel: error: /nonexistent.mp4") && bad.stderr.split(separator: "\n").count == 1)
            let mismatch = try CLIRunner.run(["package", input.path, "--out", dir.appendingPathComponent("y").path, "--format", "hls-ts", "--scheme", "cbcs"])
            #expect(mismatch.status != 0 && mismatch.stderr.contains("--format cmaf"))
        }
    }
}
