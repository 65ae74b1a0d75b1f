import Foundation
import SatchelTestSupport
import Testing

/// CEA-608 closed captions (seed 000 §3.4.1: put in before the assets are encrypted) survive Satchel's packaging,
/// encryption and the proxy's decryption: the player's stream still carries them, as ffmpeg's caption decoder reads.
@Suite(.serialized) struct CaptionTests {
    /// Puts CEA-608 captions (ATSC A/53 `GA94` cc_data in SEI `user_data_registered_itu_t_t35`, one pair of bytes a
    /// frame) before the first slice of every picture of an H.264 Annex B stream: a pop-on caption of `argv[3]`.
    static let captioner = #"""
        import sys
        source, target, text = sys.argv[1], sys.argv[2], sys.argv[3]
        data = open(source, "rb").read()
        parity = lambda b: (b & 0x7f) | (0x80 if bin(b & 0x7f).count("1") % 2 == 0 else 0)
        chars = text.encode() + (b" " if len(text) % 2 else b"")
        pairs = [(0x14, 0x20)] * 2 + [(chars[i], chars[i + 1]) for i in range(0, len(chars), 2)] + [(0x14, 0x2F)] * 2
        def sei(pair):
            payload = bytes([0xB5, 0x00, 0x31]) + b"GA94" + bytes([0x03, 0x41, 0xFF, 0xFC, parity(pair[0]), parity(pair[1]), 0xFF])
            body, escaped, zeros = bytes([0x06, 0x04, len(payload)]) + payload + bytes([0x80]), bytearray(), 0
            for b in body:
                if zeros >= 2 and b <= 3: escaped.append(3); zeros = 0
                escaped.append(b); zeros = zeros + 1 if b == 0 else 0
            return b"\x00\x00\x00\x01" + bytes(escaped)
        starts, at = [], 0
        while (found := data.find(b"\x00\x00\x01", at)) >= 0:
            starts.append((found - 1 if found > 0 and data[found - 1] == 0 else found, found + 3)); at = found + 3
        out, frame = bytearray(), 0
        for index, (start, header) in enumerate(starts):
            if data[header] & 0x1f in (1, 5) and data[header + 1] & 0x80:  # a picture's first slice
                out += sei(pairs[frame] if frame < len(pairs) else (0x80, 0x80)); frame += 1
            out += data[start:starts[index + 1][0] if index + 1 < len(starts) else len(data)]
        open(target, "wb").write(bytes(out))
        """#

    /// An H.264 + AAC MP4 of 6 s whose video carries the caption "SATCHEL CAPTIONS".
    static func captionedInput(in folder: URL) throws -> URL {
        let raw = folder.appendingPathComponent("video.h264").path, captioned = folder.appendingPathComponent("captioned.h264").path
        let output = folder.appendingPathComponent("captioned.mp4")
        _ = try TestMedia.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=6", "-c:v", "libx264", "-bf", "0",
                                         "-g", "50", "-bsf:v", "h264_mp4toannexb", "-f", "h264", raw])
        let python3 = try #require(TestMedia.which("python3"), "python3 is required")
        let made = try ProcessRunner.run(python3, ["-c", captioner, raw, captioned, "SATCHEL CAPTIONS"])
        #expect(made.status == 0, "\(made.stderr)")
        _ = try TestMedia.run("ffmpeg", ["-v", "error", "-y", "-r", "25", "-i", captioned, "-f", "lavfi", "-i", "sine=duration=6", "-c:v", "copy",
                                         "-c:a", "aac", "-shortest", output.path])
        return output
    }

    /// The captions ffmpeg's CEA-608 decoder finds in a stream (SubRip text).
    static func captions(_ file: String) throws -> String {
        try TestMedia.run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "movie=\(file)[out0+subcc]", "-map", "0:1", "-f", "srt", "-"])
    }

    @Test("CEA-608 captions survive packaging and the proxy's decryption: SAMPLE-AES MPEG-TS, CMAF cbcs for every DRM, and cenc played from its DASH manifest, each downloaded with a license and played offline; ffmpeg's caption decoder reads the caption from what the player gets")
    func captionsSurvive() async throws {
        let (server, origin, site, _, data) = try await PlayCommandTests.stage("captions")
        defer { server.stop(); origin.stop() }
        let cases = [("cc-sample-aes", "hls-ts", "sample-aes", "master.m3u8", "clearkey"), ("cc-cbcs", "cmaf", "cbcs", "master.m3u8", "clearkey,playready,widevine,fairplay"),
                     ("cc-cenc", "cmaf", "cenc", "manifest.mpd", "clearkey")]
        let input = try await TestMedia.offloaded { () throws -> URL in
            let input = try Self.captionedInput(in: server.directory)
            #expect(try Self.captions(input.path).contains("SATCHEL CAPTIONS"), "the source carries the caption")
            let token = try server.token()
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            for (id, format, scheme, entry, drm) in cases {
                try PlayCommandTests.package(input, into: site.appendingPathComponent(id), format: format, scheme: scheme, asset: id, server: server,
                                             offline: true, drm: drm)
                #expect(try CLIRunner.run(["download", "add", origin.url("\(id)/\(entry)"), "--data-dir", data, "--id", id, "--license", "--token", token]).status == 0)
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stderr)")
            return input
        }
        #expect(FileManager.default.fileExists(atPath: input.path))
        origin.stop()
        server.stop()  // offline from here on

        for (id, _, _, _, _) in cases {
            let player = try await TestMedia.offloaded { try PlayCommandTests.Player([id, "--data-dir", data]) }
            try await TestMedia.offloaded { () throws -> Void in
                let received = server.directory.appendingPathComponent("\(id)-played.ts").path
                _ = try TestMedia.run("ffmpeg", ["-v", "error", "-y", "-i", player.url, "-map", "0:v", "-c", "copy", "-f", "mpegts", received])
                let text = try Self.captions(received)
                #expect(text.contains("SATCHEL CAPTIONS"), "\(id): the player's stream lost the caption: \(text.prefix(300))")
            }
            let stopped = try await TestMedia.offloaded { player.stop() }
            #expect(stopped.status == 0, "\(id): \(stopped.stderr)")
        }
    }
}
