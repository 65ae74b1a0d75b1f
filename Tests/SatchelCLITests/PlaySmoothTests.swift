import Foundation
import SatchelTestSupport
import Testing

/// `satchel play` on Smooth Streaming sources (ffmpeg's `smoothstreaming` output): the proxy transcribes them to
/// HLS with clear MPEG-2 TS segments, and ffmpeg reads from the session every packet of the source.
@Suite(.serialized) struct PlaySmoothTests {
    typealias Player = PlayCommandTests.Player

    /// The (size, md5) of every packet ffmpeg reads from `input`, sorted: the content, whatever the container.
    static func contents(_ input: String) throws -> [String] {
        try TestMedia.packetHashes(input).map { $0.split(separator: ",").suffix(2).joined(separator: ",") }.sorted()
    }

    /// ffmpeg's Smooth output of `input` in `folder`, 2 s fragments. ffmpeg names the fragments by their times but
    /// starts its manifest's timeline at 0 (no `t` on the first `c`): the first `c` of each stream gets its time.
    static func smooth(_ input: URL, into folder: URL) throws {
        _ = try TestMedia.run("ffmpeg", ["-v", "error", "-i", input.path, "-c", "copy", "-f", "smoothstreaming", "-min_frag_duration", "2000000",
                                         folder.path])
        var manifest = try String(contentsOf: folder.appendingPathComponent("Manifest"), encoding: .utf8)
        for level in try FileManager.default.contentsOfDirectory(atPath: folder.path) where level.hasPrefix("QualityLevels(") {
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent(level).path).filter { $0.hasPrefix("Fragments(") }
            let named = files.compactMap { name -> (String, UInt64)? in
                let inside = name.dropFirst("Fragments(".count).dropLast()
                guard let equals = inside.firstIndex(of: "="), let time = UInt64(inside[inside.index(after: equals)...]) else { return nil }
                return (String(inside[..<equals]), time)
            }
            guard let stream = named.first?.0, let first = named.map(\.1).min() else { continue }
            let marker = "Fragments(\(stream)={start time})\">"
            guard let at = manifest.range(of: marker), let c = manifest.range(of: "<c n=\"0\"", range: at.upperBound..<manifest.endIndex) else { continue }
            manifest.replaceSubrange(c, with: "<c n=\"0\" t=\"\(first)\"")
        }
        try manifest.write(to: folder.appendingPathComponent("Manifest"), atomically: true, encoding: .utf8)
    }

    @Test("Smooth Streaming, online and downloaded: a PROGRAM-ID=1 variant per quality level, one TS segment per video fragment, every packet of the source; --passthrough serves the manifest as it is")
    func onlineAndDownloaded() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("play-smooth")
        defer { server.stop(); origin.stop() }
        server.stop()
        let folder = site.appendingPathComponent("show.ism")
        try await TestMedia.offloaded { () throws -> Void in
            try Self.smooth(input, into: folder)
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear-ts").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
        }
        // The TS package's packets (TS carries H.264 with access unit delimiters and AAC with ADTS headers).
        let expected = try await TestMedia.offloaded { try Self.contents(site.appendingPathComponent("clear-ts/master.m3u8").path) }
        #expect(!expected.isEmpty)

        let online = try await TestMedia.offloaded { try Player([origin.url("show.ism/Manifest"), "--data-dir", data]) }
        try await TestMedia.offloaded { () throws -> Void in
            #expect(online.url.hasSuffix("/.hls/master.m3u8"), "\(online.url)")
            let master = String(decoding: try PlayCommandTests.fetch(online.url).body, as: UTF8.self)
            #expect(master.contains("#EXT-X-STREAM-INF:PROGRAM-ID=1,BANDWIDTH=") && master.contains("RESOLUTION=320x240")
                    && master.contains("CODECS=\"avc1.") && master.hasSuffix("#EXT-X-ENDLIST\n"), "\(master)")
            let mediaName = try #require(PlayDASHTests.uris(master).first)
            let mediaURL = try #require(URL(string: mediaName, relativeTo: URL(string: online.url))).absoluteURL
            let media = String(decoding: try PlayCommandTests.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            #expect(PlayDASHTests.uris(media).count == 2 && media.contains("#EXTINF:2,") && media.hasSuffix("#EXT-X-ENDLIST\n"), "\(media)")
            let played = try Self.contents(online.url)
            #expect(played == expected, "online: \(played.count) packets vs \(expected.count)")
            // Timestamps are the manifest's times: ffmpeg's first video fragment starts at 0.08 s, its audio at 0.0587 s.
            // ffmpeg starts its reading at the audio (0.0587 s): the first video packet is the difference later.
            let manifest = try String(contentsOf: folder.appendingPathComponent("Manifest"), encoding: .utf8)
            let starts = manifest.components(separatedBy: "<c n=\"0\" t=\"").dropFirst().compactMap { Int64($0.prefix { $0 != "\"" }) }
            #expect(starts.count == 2, "\(manifest)")
            let later = (starts.first ?? 0) * 9 / 1000 - (starts.last ?? 0) * 9 / 1000  // video minus audio, 90 kHz
            let timestamps = try TestMedia.packetHashes(online.url)
            #expect(later > 0 && timestamps.contains { $0.hasPrefix("\(later),\(later),") }, "\(later)")
        }
        _ = try await TestMedia.offloaded { online.stop() }

        try await TestMedia.offloaded { () throws -> Void in
            let added = try CLIRunner.run(["download", "add", origin.url("show.ism/Manifest"), "--data-dir", data, "--id", "show"])
            #expect(added.status == 0, "\(added.stderr)")
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stderr)")
        }
        origin.stop()  // offline from here on
        let offline = try await TestMedia.offloaded { try Player(["show", "--data-dir", data]) }
        try await TestMedia.offloaded { () throws -> Void in
            let played = try Self.contents(offline.url)
            #expect(played == expected, "downloaded: \(played.count) packets vs \(expected.count)")
        }
        _ = try await TestMedia.offloaded { offline.stop() }

        let passing = try await TestMedia.offloaded { try Player(["show", "--data-dir", data, "--passthrough"]) }
        try await TestMedia.offloaded { () throws -> Void in
            let manifest = try PlayCommandTests.fetch(passing.url)
            #expect(manifest.status == 200 && manifest.headers["content-type"] == "application/vnd.ms-sstr+xml", "\(manifest.headers)")
            #expect(String(decoding: manifest.body, as: UTF8.self).contains("<SmoothStreamingMedia"))
        }
        _ = try await TestMedia.offloaded { passing.stop() }
    }
}
