import Foundation
import SatchelBytes
import SatchelPackager
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

    @Test("Apple's key file (seed 004, mediafilesegmenter --encrypt-key-file): made when absent (32 bytes, 0600), read when present; the segments decrypt with its key and IV; a file of another length is refused")
    func appleKeyFile() async throws {
        let directory = try CLIRunner.temporaryDirectory()
        let input = try await TestMedia.offloaded { try TestMedia.make("key-file-source", seconds: 2) }
        let keyFile = directory.appendingPathComponent("key.bin")
        try await TestMedia.offloaded {
            let made = try CLIRunner.run(["package", input.path, "--out", directory.appendingPathComponent("one").path, "--format", "hls-ts",
                                          "--scheme", "aes-128", "--key-file", keyFile.path, "--key-id", "0123456789abcdef0123456789abcdef"])
            #expect(made.status == 0 && made.stderr.contains("made the key file"), "\(made.stderr)")
            let bytes = try TestMedia.bytes(keyFile)
            #expect(bytes.count == 32)
            #expect(try FileManager.default.attributesOfItem(atPath: keyFile.path)[.posixPermissions] as? Int == 0o600)
            let keys = try KeyFile.read(directory.appendingPathComponent("one.keys.json").path)
            #expect(keys.keys.first?.key == Hex.encode(Array(bytes[..<16])) && keys.keys.first?.iv == Hex.encode(Array(bytes[16...])))
            #expect(keys.keys.first?.keyId == "0123456789abcdef0123456789abcdef")

            // Read back: the same key and IV package a second time; a segment decrypts with them (openssl) to MPEG-TS.
            let again = try CLIRunner.run(["package", input.path, "--out", directory.appendingPathComponent("two").path, "--format", "hls-ts",
                                           "--scheme", "aes-128", "--key-file", keyFile.path])
            #expect(again.status == 0 && !again.stderr.contains("made the key file"), "\(again.stderr)")
            #expect(try KeyFile.read(directory.appendingPathComponent("two.keys.json").path).keys.first?.key == Hex.encode(Array(bytes[..<16])))
            let two = directory.appendingPathComponent("two")
            let first = try #require(FileManager.default.subpaths(atPath: two.path)?.first { $0.hasSuffix("segment_0.ts") })
            let clear = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/openssl"), ["enc", "-d", "-aes-128-cbc", "-K", Hex.encode(Array(bytes[..<16])),
                                                                                       "-iv", Hex.encode(Array(bytes[16...])), "-in", two.appendingPathComponent(first).path,
                                                                                       "-out", directory.appendingPathComponent("clear.ts").path])
            #expect(clear.status == 0, "\(clear.stderr)")
            #expect(try TestMedia.bytes(directory.appendingPathComponent("clear.ts")).first == 0x47, "MPEG-TS once decrypted")

            try Data(repeating: 1, count: 31).write(to: directory.appendingPathComponent("short.bin"))
            let short = try CLIRunner.run(["package", input.path, "--out", directory.appendingPathComponent("three").path, "--format", "hls-ts",
                                           "--scheme", "aes-128", "--key-file", directory.appendingPathComponent("short.bin").path])
            #expect(short.status != 0 && short.stderr.contains("32 bytes"), "\(short.stderr)")
            let both = try CLIRunner.run(["package", input.path, "--out", directory.appendingPathComponent("four").path, "--format", "hls-ts",
                                          "--scheme", "aes-128", "--key-file", keyFile.path, "--key", "00112233445566778899aabbccddeeff",
                                          "--key-id", "0123456789abcdef0123456789abcdef"])
            #expect(both.status != 0 && both.stderr.contains("--key-file holds the key"), "\(both.stderr)")
        }
    }
}
