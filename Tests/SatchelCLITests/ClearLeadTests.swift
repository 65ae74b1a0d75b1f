import Foundation
import SatchelBytes
import SatchelMedia
import SatchelTestSupport
import Testing

/// `satchel package --clear-lead SECONDS` (issue 52 §5; Shaka Packager's `--clear_lead`): the first segments in the
/// clear so that playback starts before the license arrives, the key tags from the first protected segment on, and
/// for CMAF a clear sample entry after the protected one that the clear fragments name. Read back by ffmpeg, by
/// Shaka Packager and through Satchel's proxy, each to the source.
@Suite(.serialized) struct ClearLeadTests {
    static let kid = "00112233445566778899aabbccddeeff", key = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
    /// A key ID of each scheme's package (one store holds them).
    static func kid(_ scheme: String) -> String { scheme == "cbcs" ? "cbc5" + kid.dropFirst(4) : kid }

    /// The decoded frames' hashes of every stream of `input` (ffmpeg), with `extra` input options, in order of stream
    /// and time (how ffmpeg interleaves the streams varies from run to run).
    static func decoded(_ input: String, extra: [String] = []) throws -> [String] {
        let hls = input.hasSuffix(".m3u8") ? ["-allowed_extensions", "ALL"] : []
        return try TestMedia.run("ffmpeg", ["-v", "error"] + hls + extra + ["-i", input, "-map", "0", "-f", "framemd5", "-"])
            .split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init).sorted()
    }

    /// A copy of a media playlist from its second segment on (`tail.m3u8` beside it), without the discontinuity before it.
    static func fromSecondSegment(_ playlist: URL) throws -> String {
        let lines = try String(contentsOf: playlist, encoding: .utf8).split(separator: "\n").map(String.init)
        let firstSegment = try #require(lines.firstIndex { $0.hasPrefix("#EXTINF") })
        let tail = lines[..<firstSegment] + lines[(firstSegment + 2)...].filter { $0 != "#EXT-X-DISCONTINUITY" }
        let out = playlist.deletingLastPathComponent().appendingPathComponent("tail.m3u8")
        try tail.joined(separator: "\n").write(to: out, atomically: true, encoding: .utf8)
        return out.path
    }

    /// The `mdat` payload of an fMP4 segment.
    static func mediaData(_ file: URL) throws -> [UInt8] {
        let bytes = [UInt8](try Data(contentsOf: file))
        let boxes = try MP4Box.children(of: bytes, in: 0..<bytes.count)
        let mdat = try #require(boxes.first { $0.type == "mdat" })
        return Array(bytes[mdat.payload])
    }

    @Test("--clear-lead 2 on HLS-TS (aes-128, sample-aes): the first segment of each rendition byte for byte a clear package's, the key tag (and for SAMPLE-AES's changed stream types a discontinuity) at the second; ffmpeg decodes each to the clear package's frames; refused without a protected scheme and for Smooth")
    func transportStream() async throws {
        let folder = try TestMedia.temporaryDirectory("clear-lead-ts")
        try await TestMedia.offloaded { () throws -> Void in
            let input = try TestMedia.make("clear-lead", seconds: 6)
            let keyBytes = Data(try Hex.decode(Self.key))
            let clear = folder.appendingPathComponent("clear")
            #expect(try CLIRunner.run(["package", input.path, "--out", clear.path, "--format", "hls-ts", "--segment-duration", "2"]).status == 0)
            let frames = try Self.decoded(clear.appendingPathComponent("master.m3u8").path)
            for scheme in ["aes-128", "sample-aes"] {
                let out = folder.appendingPathComponent(scheme)
                let packaged = try CLIRunner.run(["package", input.path, "--out", out.path, "--format", "hls-ts", "--scheme", scheme, "--segment-duration", "2",
                                                  "--clear-lead", "2", "--key-id", Self.kid, "--key", Self.key, "--key-uri", "key.bin"])
                #expect(packaged.status == 0, "\(scheme): \(packaged.stderr)")
                for rendition in ["video_0", "audio_0"] {
                    try keyBytes.write(to: out.appendingPathComponent("\(rendition)/key.bin"))
                    let first = try Data(contentsOf: out.appendingPathComponent("\(rendition)/segment_0.ts"))
                    #expect(first == (try Data(contentsOf: clear.appendingPathComponent("\(rendition)/segment_0.ts"))), "\(scheme) \(rendition): the clear lead is a clear package's segment")
                    #expect(try Data(contentsOf: out.appendingPathComponent("\(rendition)/segment_1.ts")) != Data(contentsOf: clear.appendingPathComponent("\(rendition)/segment_1.ts")),
                            "\(scheme) \(rendition): protected after the lead")
                    let playlist = try String(contentsOf: out.appendingPathComponent("\(rendition)/index.m3u8"), encoding: .utf8)
                    let beforeFirst = try #require(playlist.components(separatedBy: "segment_0.ts").first)
                    let beforeSecond = try #require(playlist.components(separatedBy: "segment_1.ts").first?.components(separatedBy: "segment_0.ts").last)
                    #expect(!beforeFirst.contains("#EXT-X-KEY") && beforeSecond.contains("#EXT-X-KEY:METHOD=\(scheme == "aes-128" ? "AES-128" : "SAMPLE-AES")"), "\(playlist)")
                    #expect(beforeSecond.contains("#EXT-X-DISCONTINUITY") == (scheme == "sample-aes"), "\(playlist)")
                }
                if scheme == "aes-128" {
                    #expect(try Self.decoded(out.appendingPathComponent("master.m3u8").path) == frames, "\(scheme): ffmpeg decodes the clear package's frames")
                } else {
                    // ffmpeg 5.1 crashes on a SAMPLE-AES playlist that starts clear (Shaka Packager's too): the lead is
                    // checked byte for byte above, the protected rest decoded from its first protected segment. ffmpeg's
                    // SAMPLE-AES leaves a stream's last two PES packets undecrypted (with or without a clear lead).
                    for rendition in ["video_0", "audio_0"] {
                        let tail = try Self.decoded(Self.fromSecondSegment(out.appendingPathComponent("\(rendition)/index.m3u8")))
                        let plain = try Self.decoded(Self.fromSecondSegment(clear.appendingPathComponent("\(rendition)/index.m3u8")))
                        #expect(tail.count == plain.count && tail.count > 50 && tail.dropLast(2) == plain.dropLast(2),
                                "\(scheme) \(rendition): ffmpeg decodes the protected segments to the clear package's frames")
                    }
                }
            }
            for (arguments, words) in [(["--format", "hls-ts"], "--clear-lead needs a protected --scheme"),
                                       (["--format", "smooth", "--scheme", "cenc"], "Smooth Streaming has no clear lead"),
                                       (["--format", "cmaf", "--scheme", "cenc", "--clear-lead", "4000"], "between 0 and 3600")] {
                let refused = try CLIRunner.run(["package", input.path, "--out", folder.appendingPathComponent("refused").path, "--clear-lead", "2"] + arguments)
                #expect(refused.status != 0 && refused.stderr.contains(words), "\(arguments): \(refused.stderr)")
            }
        }
    }

    @Test("--clear-lead 2 on CMAF (cenc, cbcs): the init segment lists the protected sample entry then a clear one; the first fragment names the clear one and carries the clear package's samples, each fragment a segment index as Shaka's; the key tag at the second segment; ffmpeg (-decryption_key) and Shaka Packager decrypt to the source; played through the proxy (and SAMPLE-AES TS with a clear lead), every packet of the clear package")
    func cmaf() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("clear-lead-cmaf")
        defer { server.stop(); origin.stop() }
        let token = try await server.token()
        try await TestMedia.offloaded { () throws -> Void in
            let clear = site.appendingPathComponent("clear")
            #expect(try CLIRunner.run(["package", input.path, "--out", clear.path, "--format", "cmaf", "--segment-duration", "2"]).status == 0)
            let source = try PlaySmoothTests.contents(input.path)
            for scheme in ["cenc", "cbcs"] {
                let out = site.appendingPathComponent(scheme)
                let packaged = try CLIRunner.run(["package", input.path, "--out", out.path, "--format", "cmaf", "--scheme", scheme, "--segment-duration", "2",
                                                  "--clear-lead", "2", "--key-id", Self.kid(scheme), "--key", Self.key, "--register", "--asset-id", scheme,
                                                  "--data-dir", server.data, "--keys-out", site.appendingPathComponent("\(scheme).keys.json").path])
                #expect(packaged.status == 0, "\(scheme): \(packaged.stderr)")
                for (rendition, stream) in [("video_0", "video"), ("audio_0", "audio")] {
                    let folder = out.appendingPathComponent(rendition)
                    let initSegment = [UInt8](try Data(contentsOf: folder.appendingPathComponent("init.mp4")))
                    let text = String(decoding: initSegment, as: UTF8.self)
                    let (protected, plain) = stream == "video" ? ("encv", "avc1") : ("enca", "mp4a")
                    let entries = (text.range(of: protected)?.lowerBound, text.range(of: plain, options: .backwards)?.lowerBound)
                    #expect(entries.0 != nil && entries.1 != nil && entries.0! < entries.1!, "\(scheme) \(rendition): the protected entry, then the clear one")
                    #expect(try Self.mediaData(folder.appendingPathComponent("segment_1.m4s")) == Self.mediaData(clear.appendingPathComponent("\(rendition)/segment_1.m4s")),
                            "\(scheme) \(rendition): the clear lead's samples are the clear package's")
                    #expect(try Self.mediaData(folder.appendingPathComponent("segment_2.m4s")) != Self.mediaData(clear.appendingPathComponent("\(rendition)/segment_2.m4s")))
                    let first = [UInt8](try Data(contentsOf: folder.appendingPathComponent("segment_1.m4s")))
                    #expect(!PlayCommandTests.contains(first, "senc") && PlayCommandTests.contains(first, "sidx"), "\(scheme) \(rendition): no sample encryption in the lead")
                    let playlist = try String(contentsOf: folder.appendingPathComponent("index.m3u8"), encoding: .utf8)
                    #expect(!(playlist.components(separatedBy: "segment_1.m4s").first ?? "").contains("#EXT-X-KEY")
                            && (playlist.components(separatedBy: "segment_2.m4s").first ?? "").contains("#EXT-X-KEY"), "\(playlist)")

                    // ffmpeg decrypts the whole track with the key: the clear package's frames.
                    var whole = Data(initSegment)
                    let segments = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("segment_") }
                        .sorted { (Int($0.dropFirst(8).dropLast(4)) ?? 0) < (Int($1.dropFirst(8).dropLast(4)) ?? 0) }
                    for segment in segments { whole += try Data(contentsOf: folder.appendingPathComponent(segment)) }
                    let joined = site.appendingPathComponent("\(scheme)-\(stream).mp4")
                    try whole.write(to: joined)
                    var plainWhole = try Data(contentsOf: clear.appendingPathComponent("\(rendition)/init.mp4"))
                    for segment in segments { plainWhole += try Data(contentsOf: clear.appendingPathComponent("\(rendition)/\(segment)")) }
                    let plainJoined = site.appendingPathComponent("clear-\(stream).mp4")
                    try plainWhole.write(to: plainJoined)
                    #expect(try Self.decoded(joined.path, extra: ["-decryption_key", Self.key]) == Self.decoded(plainJoined.path), "\(scheme) \(stream): ffmpeg")

                    // Shaka Packager decrypts it to the clear package's packets.
                    let shaka = site.appendingPathComponent("\(scheme)-\(stream)-shaka.mp4")
                    try ShakaInteropTests.shakaDecrypt(folder, stream: stream, kid: Self.kid(scheme), key: Self.key, into: shaka)
                    #expect(try PlaySmoothTests.contents(shaka.path) == PlaySmoothTests.contents(plainJoined.path), "\(scheme) \(stream): Shaka")
                }
            }
            #expect(!source.isEmpty)
            // SAMPLE-AES in MPEG-TS with a clear lead, for the proxy too.
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear-ts").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
            let ts = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("sample-aes").path, "--format", "hls-ts", "--scheme", "sample-aes",
                                        "--segment-duration", "2", "--clear-lead", "2", "--register", "--asset-id", "sample-aes", "--data-dir", server.data])
            #expect(ts.status == 0, "\(ts.stderr)")
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
        }
        for scheme in ["cenc", "cbcs", "sample-aes"] {
            let clear = scheme == "sample-aes" ? "clear-ts" : "clear"
            let expected = try await TestMedia.offloaded { try TestMedia.packetHashes(site.appendingPathComponent("\(clear)/master.m3u8").path) }
            let player = try await TestMedia.offloaded { try PlayCommandTests.Player([origin.url("\(scheme)/master.m3u8"), "--data-dir", data, "--token", token]) }
            let played = try await TestMedia.offloaded { try TestMedia.packetHashes(player.url) }
            #expect(!expected.isEmpty && played == expected, "\(scheme): \(played.count) packets vs \(expected.count)")
            let stopped = try await TestMedia.offloaded { player.stop() }
            #expect(stopped.status == 0, "\(scheme): \(stopped.stderr)")
        }
    }
}
