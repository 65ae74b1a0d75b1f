import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing

/// AC-3 and E-AC-3 audio in SAMPLE-AES MPEG-TS (seed 004; Apple's sample encryption format): packaged by Satchel,
/// read by ffmpeg's own SAMPLE-AES decryptor, and made clear by Satchel's proxy, both to the clear package's packets.
@Suite(.serialized) struct DolbySampleAESTests {
    /// The packets of an HLS stream by stream (`stream,dts,pts,size,hash`), each stream's last two left out: ffmpeg's
    /// own SAMPLE-AES decryptor leaves the last PES packets of a stream, flushed at its end, as they are (H.264 and
    /// AAC packages show it as AC-3 ones do), so those are no check of the format.
    static func packetsButLast(_ playlist: String) throws -> [String] {
        let lines = try TestMedia.run("ffmpeg", ["-v", "error", "-allowed_extensions", "ALL", "-i", playlist, "-map", "0", "-c", "copy", "-f", "framemd5", "-"])
            .split(separator: "\n").filter { !$0.hasPrefix("#") }
        var byStream: [String: [String]] = [:]
        for line in lines {
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count >= 6 else { continue }
            byStream[fields[0], default: []].append(fields[0...5].joined(separator: ","))
        }
        return byStream.keys.sorted().flatMap { (byStream[$0] ?? []).dropLast(2) }
    }

    @Test("AC-3 and E-AC-3 SAMPLE-AES: ffmpeg decrypts Satchel's package with the key (the audio setup information as Apple's format has it) to the clear package's packets; downloaded with a license, the proxy plays it clear, packet for packet")
    func dolby() async throws {
        let (server, origin, site, _, data) = try await PlayCommandTests.stage("dolby")
        defer { server.stop(); origin.stop() }
        let codecs = ["ac3", "eac3"]
        let key = "00112233445566778899aabbccddeeff", kid = "abcdef0123456789abcdef0123456789"
        try await TestMedia.offloaded { () throws -> Void in
            let token = try server.token()
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            for codec in codecs {
                let input = try TestMedia.make("dolby-\(codec)", seconds: 4, size: "320x180", extra: ["-c:a", codec, "-b:a", "192k"])
                try PlayCommandTests.package(input, into: site.appendingPathComponent("clear-\(codec)"), format: "hls-ts")
                // With the key beside the playlists (a relative key URI), ffmpeg decrypts SAMPLE-AES itself.
                let local = site.appendingPathComponent("local-\(codec)")
                let packaged = try CLIRunner.run(["package", input.path, "--out", local.path, "--format", "hls-ts", "--scheme", "sample-aes",
                                                  "--key-id", kid, "--key", key, "--key-uri", "key.bin", "--segment-duration", "2"])
                #expect(packaged.status == 0, "\(codec): \(packaged.stderr)")
                for rendition in ["video_0", "audio_0"] where FileManager.default.fileExists(atPath: local.appendingPathComponent(rendition).path) {
                    try Data(try Hex.decode(key)).write(to: local.appendingPathComponent("\(rendition)/key.bin"))
                }
                let expected = try Self.packetsButLast(site.appendingPathComponent("clear-\(codec)/master.m3u8").path)
                let ffmpeg = try Self.packetsButLast(local.appendingPathComponent("master.m3u8").path)
                #expect(expected.count > 100 && ffmpeg == expected, "\(codec): ffmpeg's decryption of Satchel's SAMPLE-AES: \(ffmpeg.count) packets vs \(expected.count)")
                // Registered with the license server, then downloaded with a license.
                try PlayCommandTests.package(input, into: site.appendingPathComponent(codec), format: "hls-ts", scheme: "sample-aes", asset: codec,
                                             server: server, offline: true)
                #expect(try CLIRunner.run(["download", "add", origin.url("\(codec)/master.m3u8"), "--data-dir", data, "--id", codec, "--license",
                                           "--token", token]).status == 0)
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stderr)")
        }
        origin.stop()
        server.stop()  // offline from here on
        for codec in codecs {
            let player = try await TestMedia.offloaded { try PlayCommandTests.Player([codec, "--data-dir", data]) }
            try await TestMedia.offloaded { () throws -> Void in
                let expected = try TestMedia.packetHashes(site.appendingPathComponent("clear-\(codec)/master.m3u8").path)
                let played = try TestMedia.packetHashes(player.url)
                #expect(!expected.isEmpty && played == expected, "\(codec): the proxy's clear stream: \(played.count) packets vs \(expected.count)")
                // The clear TS declares the stream with its registration descriptor (AC-3 / EAC3), so a reader tells them apart.
                let master = String(decoding: try PlayCommandTests.fetch(player.url).body, as: UTF8.self)
                let audioURI = try #require(master.split(separator: "\n").first { $0.contains("TYPE=AUDIO") }?
                    .split(separator: "URI=\"").last?.split(separator: "\"").first.map(String.init), "\(master)")
                let audioURL = try #require(URL(string: audioURI, relativeTo: URL(string: player.url))).absoluteURL
                let media = String(decoding: try PlayCommandTests.fetch(audioURL.absoluteString).body, as: UTF8.self)
                let first = try #require(media.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init))
                let segment = try PlayCommandTests.fetch(audioURL.deletingLastPathComponent().appendingPathComponent(first).absoluteString).body
                let descriptor: [UInt8] = [0x05, 0x04] + Array((codec == "ac3" ? "AC-3" : "EAC3").utf8)
                #expect(segment.indices.dropLast(5).contains { Array(segment[$0..<($0 + 6)]) == descriptor }, "\(codec): the PMT's registration descriptor")
                // GStreamer's demuxer tells AC-3 from E-AC-3 by that descriptor, without guessing aloud, in the proxy's
                // TS and in the packager's.
                let served = site.appendingPathComponent("served-\(codec).ts")
                try Data(segment).write(to: served)
                for file in [served, site.appendingPathComponent("clear-\(codec)/audio_0/segment_0.ts")] {
                    let gst = try #require(TestMedia.which("gst-launch-1.0"), "GStreamer is required (scripts/test installs it)")
                    let read = try ProcessRunner.run(gst, ["filesrc", "location=\(file.path)", "!", "tsdemux", "!", "fakesink"], environment: ["GST_DEBUG": "tsdemux:2"])
                    #expect(read.status == 0 && !read.stderr.contains("no guaranteed way") && !read.stdout.contains("no guaranteed way"),
                            "\(codec) \(file.lastPathComponent): \(read.stderr.suffix(500))")
                }
            }
            let stopped = try await TestMedia.offloaded { player.stop() }
            #expect(stopped.status == 0, "\(codec): \(stopped.stderr)")
        }
    }
}
