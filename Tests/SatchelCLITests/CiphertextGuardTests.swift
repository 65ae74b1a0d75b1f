import Foundation
import SatchelProtection
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

    @Test("an MP4 that ffmpeg encrypted in fragments (cenc-aes-ctr, frag_keyframe+empty_moov: ffmpeg 5.1 writes no 'senc' in its fragments, so no sample's IV is there and ffmpeg itself cannot decrypt it), its key on the license server: played online with a token and downloaded with its license, the proxy refuses it as invalid content naming the missing box; not a byte of media goes out")
    func fragmentedCencWithoutIVs() async throws {
        try TestMedia.require("ffmpeg")
        let server = try await AgentCommandTests.Server("ciphertext-fragmented")
        try await server.start()
        defer { server.stop() }
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let clip = try await TestMedia.offloaded { try TestMedia.make("ciphertext-fragmented", seconds: 2) }
        let locked = site.appendingPathComponent("locked.mp4")
        try await TestMedia.offloaded {
            // The key and key ID of the server's "clip" asset (offline allowed).
            _ = try TestMedia.run("ffmpeg", ["-v", "error", "-y", "-i", clip.path, "-c", "copy", "-movflags", "frag_keyframe+empty_moov+default_base_moof",
                                             "-encryption_scheme", "cenc-aes-ctr", "-encryption_key", "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf",
                                             "-encryption_kid", "10112233445566778899aabbccddeeff", locked.path])
        }
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        let data = server.directory.appendingPathComponent("device").path
        let token = try await server.token()
        try await TestMedia.offloaded {
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            let added = try CLIRunner.run(["download", "add", origin.url("locked.mp4"), "--id", "clip", "--license", "--token", token, "--data-dir", data])
            #expect(added.status == 0, "\(added.stderr)")
            let ran = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(ran.status == 0, "\(ran.stderr)")
        }
        for source in await [[origin.url("locked.mp4"), "--token", try server.token(persistent: false, asset: "clip")], ["clip"]] {
            let player = try await TestMedia.offloaded { try PlayCommandTests.Player(source + ["--data-dir", data]) }
            for range in [nil, "bytes=0-99", "bytes=3000-3999"] {
                let answer = try await TestMedia.offloaded { try PlayCommandTests.fetch(player.url, range: range) }
                let text = String(decoding: answer.body, as: UTF8.self)
                #expect(answer.status == 502 && text.contains("invalid-content") && text.contains("carries no sample encryption box ('senc')"),
                        "\(source[0]) \(range ?? "whole"): \(answer.status) \(text.prefix(400))")
                #expect(!text.contains("ftyp"), "no media")
            }
            _ = try await TestMedia.offloaded { player.stop() }
        }
        // Its head made clear keeps none of the sample table's encryption boxes ffmpeg writes there (senc, saio, saiz).
        let bytes = try TestMedia.bytes(locked)
        let moof = try #require(bytes.indices.first { bytes[$0...].starts(with: Array("moof".utf8)) }) - 4
        let head = try FMP4Decryptor.clearInitSegment(Array(bytes[..<moof]))
        #expect(ClearOutputCheck.protection(inFMP4: Array(bytes[..<moof])).count == 4, "the stored head: its two protected sample entries, two senc")
        #expect(ClearOutputCheck.protection(inFMP4: head).isEmpty && !head.contains(subsequence: Array("saiz".utf8)), "the clear head")
    }
}

private extension Array where Element == UInt8 {
    /// True when `part` occurs in the bytes.
    func contains(subsequence part: [UInt8]) -> Bool { indices.contains { self[$0...].starts(with: part) } }
}
