import Foundation
import SatchelTestSupport
import Testing

/// `satchel play` on DASH sources: the proxy transcribes them to HLS with clear MPEG-2 TS segments (seed 002's
/// playlist proxy), and ffmpeg reads from the session the packets of the clear TS package of the same input.
@Suite(.serialized) struct PlayDASHTests {
    typealias Player = PlayCommandTests.Player

    /// The packets ffmpeg reads from `input`, in a stable order (a transcribed variant carries video and audio in
    /// one stream; the TS package has them as two renditions, so only the order of their interleaving differs).
    static func packets(_ input: String) throws -> [String] {
        try TestMedia.packetHashes(input).sorted()
    }

    /// The byte range of the first top-level box of `type` in `bytes`.
    static func box(_ type: String, in bytes: [UInt8]) -> ClosedRange<Int>? {
        var offset = 0
        while offset + 8 <= bytes.count {
            let size = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8 else { return nil }
            if String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self) == type { return offset...(offset + size - 1) }
            offset += size
        }
        return nil
    }

    /// The lines of `text` that are URIs.
    static func uris(_ text: String) -> [String] {
        text.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
    }

    /// `base.mpd` in `folder`: one SegmentBase adaptation set per track, each a fragmented MP4 with a global `sidx` that
    /// ffmpeg makes of `source`'s `map` stream (video or audio, with `lang` when given).
    static func segmentBaseMPD(in folder: URL, tracks: [(name: String, source: URL, map: String, lang: String?)]) throws {
        var sets: [String] = []
        for (name, source, map, lang) in tracks {
            let video = map.hasSuffix(":v")
            let file = folder.appendingPathComponent(name)
            let fragments = video ? ["-movflags", "+frag_keyframe+empty_moov+default_base_moof+global_sidx+dash"]
                : ["-frag_duration", "2000000", "-movflags", "+empty_moov+default_base_moof+global_sidx+dash"]
            _ = try TestMedia.run("ffmpeg", ["-v", "error", "-i", source.path, "-map", map, "-c", "copy"] + fragments + ["-f", "mp4", file.path])
            let index = try #require(box("sidx", in: Array(try Data(contentsOf: file))), "\(name) has a sidx")
            let kind = video ? "video" : "audio"
            sets.append("""
                <AdaptationSet contentType="\(kind)" mimeType="\(kind)/mp4"\(lang.map { " lang=\"\($0)\"" } ?? "")>\
                <Representation id="\(name)" bandwidth="100000" codecs="\(video ? "avc1.64000d" : "mp4a.40.2")">
                  <BaseURL>\(name)</BaseURL><SegmentBase indexRange="\(index.lowerBound)-\(index.upperBound)"/></Representation></AdaptationSet>
                """)
        }
        try """
            <?xml version="1.0"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S"><Period>
            \(sets.joined(separator: "\n"))
            </Period></MPD>
            """.write(to: folder.appendingPathComponent("base.mpd"), atomically: true, encoding: .utf8)
    }

    @Test("a DASH CMAF cenc asset downloaded with a license plays offline as HLS: a PROGRAM-ID=1 variant, TS segments of one video and one audio DASH segment, the clear TS package's packets; --passthrough serves the MPD as it is")
    func downloadedCENC() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("play-dash")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded {
            try PlayCommandTests.packageAndDownload(input, clear: "clear-ts", id: "dash", format: "cmaf", scheme: "cenc", entry: "manifest.mpd",
                                                    site: site, origin: origin, server: server, data: data)
        }
        origin.stop()
        server.stop()  // offline from here on

        let player = try await TestMedia.offloaded { try Player(["dash", "--data-dir", data]) }
        #expect(player.url.hasSuffix("/.hls/master.m3u8"), "\(player.url)")
        try await TestMedia.offloaded { () throws -> Void in
            let expected = try Self.packets(site.appendingPathComponent("clear-ts/master.m3u8").path)
            let played = try Self.packets(player.url)
            #expect(!expected.isEmpty && played == expected, "\(played.count) packets vs \(expected.count)")

            let master = String(decoding: try PlayCommandTests.fetch(player.url).body, as: UTF8.self)
            #expect(master.contains("#EXT-X-STREAM-INF:PROGRAM-ID=1,BANDWIDTH=") && master.contains("RESOLUTION=320x240")
                    && master.hasSuffix("#EXT-X-ENDLIST\n"), "\(master)")
            let mediaName = try #require(Self.uris(master).first)
            let mediaURL = try #require(URL(string: mediaName, relativeTo: URL(string: player.url))).absoluteURL
            let media = String(decoding: try PlayCommandTests.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            #expect(media.contains("#EXT-X-TARGETDURATION:2\n") && media.contains("#EXTINF:2,") && media.hasSuffix("#EXT-X-ENDLIST\n")
                    && !media.contains("KEY"), "\(media)")
            let segments = Self.uris(media)
            #expect(segments.count == 2, "one HLS segment per DASH video segment: \(segments)")
            let segment = try PlayCommandTests.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(segments[0]).absoluteString)
            #expect(segment.status == 200 && segment.headers["content-type"] == "video/mp2t" && segment.body.first == 0x47
                    && segment.body.count % 188 == 0)
            let part = try PlayCommandTests.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(segments[0]).absoluteString,
                                                  range: "bytes=188-375")
            #expect(part.status == 206 && part.body == Array(segment.body[188...375]))

            // A DASH segment missing from the store, the origin down: its HLS segment answers 503, at once.
            let stored = URL(fileURLWithPath: data).appendingPathComponent("assets/dash/video_0/segment_2.m4s")
            let kept = try Data(contentsOf: stored)
            try FileManager.default.removeItem(at: stored)
            let missing = try PlayCommandTests.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(segments[1]).absoluteString)
            #expect(missing.status == 503, "\(missing.status)")
            try kept.write(to: stored)
        }
        let stopped = try await TestMedia.offloaded { player.stop() }
        #expect(stopped.stderr.contains("server-error: dash/video_0/segment_2.m4s"), "\(stopped.stderr)")

        let passing = try await TestMedia.offloaded { try Player(["dash", "--data-dir", data, "--passthrough"]) }
        try await TestMedia.offloaded { () throws -> Void in
            #expect(passing.url.hasSuffix("/manifest.mpd"))
            let mpd = try PlayCommandTests.fetch(passing.url)
            let stored = try Data(contentsOf: URL(fileURLWithPath: data).appendingPathComponent("assets/dash/manifest.mpd"))
            #expect(mpd.status == 200 && mpd.body == Array(stored), "the MPD goes out as stored")
        }
        _ = try await TestMedia.offloaded { passing.stop() }
    }

    @Test("online DASH: cbcs with a token's license, ffmpeg's own DASH output (SegmentTimeline; one file per track with SegmentList byte ranges and Initialization@range), SegmentBase (subsegments from the sidx), and two periods (DISCONTINUITY) each play the clear packets")
    func online() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("play-dash-online")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            try PlayCommandTests.package(input, into: site.appendingPathComponent("clear-ts"), format: "hls-ts")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("clear-cmaf"), format: "cmaf")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("cdn"), format: "cmaf", scheme: "cbcs", asset: "movie", server: server)
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(), "--data-dir", data]).status == 0)
            for (folder, extra) in [("ffmpeg-timeline", [String]()), ("ffmpeg-single", ["-single_file", "1"])] {
                let out = site.appendingPathComponent(folder)
                try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
                _ = try TestMedia.run("ffmpeg", ["-v", "error", "-i", input.path, "-c", "copy", "-f", "dash", "-seg_duration", "2"] + extra
                                      + [out.appendingPathComponent("out.mpd").path])
            }
            // SegmentBase: one fragmented file per track with a global sidx (ffmpeg), the MPD written here.
            let single = site.appendingPathComponent("segment-base")
            try FileManager.default.createDirectory(at: single, withIntermediateDirectories: true)
            try Self.segmentBaseMPD(in: single, tracks: [("v.mp4", input, "0:v", nil), ("a.mp4", input, "0:a", nil)])
            // Two periods: the clear package twice, the second through a period BaseURL.
            var mpd = try String(contentsOf: site.appendingPathComponent("clear-cmaf/manifest.mpd"), encoding: .utf8)
            let start = try #require(mpd.range(of: "<Period")), end = try #require(mpd.range(of: "</Period>"))
            let period = String(mpd[start.lowerBound..<end.upperBound])
            let duration = try #require(mpd.components(separatedBy: "mediaPresentationDuration=\"PT").dropFirst().first?.prefix { $0 != "S" })
            let opening = "<Period id=\"0\" start=\"PT0S\">"
            let first = period.replacingOccurrences(of: opening, with: opening + "\n    <BaseURL>../clear-cmaf/</BaseURL>")
            let second = period.replacingOccurrences(of: opening,
                                                     with: "<Period id=\"1\" start=\"PT\(duration)S\">\n    <BaseURL>../clear-cmaf/</BaseURL>")
            mpd.replaceSubrange(start.lowerBound..<end.upperBound, with: first + "\n" + second)
            mpd = mpd.replacingOccurrences(of: "mediaPresentationDuration=\"PT\(duration)S\"", with: "mediaPresentationDuration=\"PT\((Double(duration) ?? 4) * 2)S\"")
            try FileManager.default.createDirectory(at: site.appendingPathComponent("periods"), withIntermediateDirectories: true)
            try mpd.write(to: site.appendingPathComponent("periods/two.mpd"), atomically: true, encoding: .utf8)
        }
        let expected = try await TestMedia.offloaded { try Self.packets(site.appendingPathComponent("clear-ts/master.m3u8").path) }
        #expect(!expected.isEmpty)

        let token = try await server.token(persistent: false, asset: "movie")
        let stderr = try await PlayCommandTests.plays([origin.url("cdn/manifest.mpd"), "--data-dir", data, "--token", token], token: token,
                                                      expected: expected, label: "cbcs", read: Self.packets)
        #expect(stderr.contains("opened: movie"), "\(stderr)")

        for source in ["ffmpeg-timeline/out.mpd", "ffmpeg-single/out.mpd", "segment-base/base.mpd"] {
            try await TestMedia.offloaded { () throws -> Void in
                // --exec runs no shell: a player that needs one names it (the session URL holds only safe characters).
                let output = try CLIRunner.run(["play", origin.url(source), "--data-dir", data, "--exec",
                                                "sh -c 'ffmpeg -y -v error -i {url} -map 0 -c copy -f framemd5 \(site.path)/played.txt && curl -sf {url}/../v0.m3u8 -o \(site.path)/media.m3u8'"])
                #expect(output.status == 0, "\(source): \(output.stderr)")
                let lines = (try String(contentsOf: site.appendingPathComponent("played.txt"), encoding: .utf8)).split(separator: "\n")
                let played = lines.filter { !$0.hasPrefix("#") }.map { line in
                    let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    return [fields[1], fields[2], fields[4], fields[5]].joined(separator: ",")
                }.sorted()
                if source.hasPrefix("segment-base") {
                    // ffmpeg muxed each track into a file of its own and moved each file's start to zero apart (its edit
                    // lists say so, and the proxy honours them): the same packets, each track shifted by its own amount.
                    func content(_ packets: [String]) -> [String] { packets.map { $0.split(separator: ",").suffix(2).joined(separator: ",") }.sorted() }
                    #expect(content(played) == content(expected), "\(source): \(played.count) packets vs \(expected.count)")
                } else {
                    #expect(played == expected, "\(source): \(played.count) packets vs \(expected.count)")
                }
                // One HLS segment per DASH video segment (for SegmentBase: per subsegment the sidx lists, not the whole file).
                let media = try String(contentsOf: site.appendingPathComponent("media.m3u8"), encoding: .utf8)
                #expect(Self.uris(media).count == 2, "\(source): \(media)")
            }
        }

        // Two periods: every packet twice (the hashes; each period's timestamps start again after the DISCONTINUITY).
        let twice = try await TestMedia.offloaded { try Player([origin.url("periods/two.mpd"), "--data-dir", data]) }
        try await TestMedia.offloaded { () throws -> Void in
            let master = String(decoding: try PlayCommandTests.fetch(twice.url).body, as: UTF8.self)
            let mediaName = try #require(Self.uris(master).first)
            let mediaURL = try #require(URL(string: mediaName, relativeTo: URL(string: twice.url))).absoluteURL
            let media = String(decoding: try PlayCommandTests.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            #expect(media.components(separatedBy: "#EXT-X-DISCONTINUITY\n").count == 2 && Self.uris(media).count == 4, "\(media)")
            let hashes = { (list: [String]) in list.map { $0.split(separator: ",").last.map(String.init) ?? "" }.sorted() }
            let played = hashes(try TestMedia.packetHashes(twice.url))
            #expect(played == hashes(expected + expected), "\(played.count) packets vs \(expected.count * 2)")
        }
        _ = try await TestMedia.offloaded { twice.stop() }
    }

    @Test("a dynamic MPD: playlists without ENDLIST; the MPD is fetched again when the player reloads a media playlist: segments dropped and added, MEDIA-SEQUENCE moves on, the new segment plays")
    func dynamic() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("play-dash-live")
        defer { server.stop(); origin.stop() }
        server.stop()
        let live = site.appendingPathComponent("live")
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["package", input.path, "--out", live.path, "--format", "cmaf", "--segment-duration", "2"]).status == 0)
        }
        let packaged = try String(contentsOf: live.appendingPathComponent("manifest.mpd"), encoding: .utf8)
        /// The packaged MPD made dynamic, listing the video and audio segments from `first` (1 or 2) on.
        func window(from first: Int) throws -> String {
            var text = packaged.replacingOccurrences(of: "type=\"static\"", with: "type=\"dynamic\" availabilityStartTime=\"2026-01-01T00:00:00Z\"")
            guard first == 2 else { return text }
            text = text.replacingOccurrences(of: "startNumber=\"1\"", with: "startNumber=\"2\"")
            // Drop each timeline's first segment: the video's <S t="0" d="D" r="1"/> becomes <S t="D" d="D"/>.
            let video = try #require(text.components(separatedBy: "<S t=\"0\" d=\"").dropFirst().first?.prefix { $0 != "\"" })
            text = text.replacingOccurrences(of: "<S t=\"0\" d=\"\(video)\" r=\"1\"/>", with: "<S t=\"\(video)\" d=\"\(video)\"/>")
            let audio = try #require(text.components(separatedBy: "<S t=\"0\" d=\"").dropFirst().first?.prefix { $0 != "\"" })
            let next = try #require(text.components(separatedBy: "<S t=\"0\" d=\"\(audio)\"/>\n            <S d=\"").dropFirst().first?.prefix { $0 != "\"" })
            return text.replacingOccurrences(of: "<S t=\"0\" d=\"\(audio)\"/>\n            <S d=\"\(next)\"/>", with: "<S t=\"\(audio)\" d=\"\(next)\"/>")
        }
        let (opening, later) = (try window(from: 1), try window(from: 2))
        try opening.write(to: live.appendingPathComponent("live.mpd"), atomically: true, encoding: .utf8)
        let player = try await TestMedia.offloaded { try Player([origin.url("live/live.mpd"), "--data-dir", data]) }
        try await TestMedia.offloaded { () throws -> Void in
            let master = String(decoding: try PlayCommandTests.fetch(player.url).body, as: UTF8.self)
            #expect(!master.contains("ENDLIST"), "\(master)")
            let mediaName = try #require(Self.uris(master).first)
            let mediaURL = try #require(URL(string: mediaName, relativeTo: URL(string: player.url))).absoluteURL
            let before = String(decoding: try PlayCommandTests.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            #expect(before.contains("#EXT-X-MEDIA-SEQUENCE:1\n") && !before.contains("ENDLIST") && Self.uris(before).count == 2, "\(before)")
            try later.write(to: live.appendingPathComponent("live.mpd"), atomically: true, encoding: .utf8)
            let after = String(decoding: try PlayCommandTests.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            #expect(after.contains("#EXT-X-MEDIA-SEQUENCE:2\n") && Self.uris(after) == Array(Self.uris(before).dropFirst()), "\(after)")
            let segment = try #require(Self.uris(after).first)
            let served = try PlayCommandTests.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(segment).absoluteString)
            #expect(served.status == 200 && served.body.first == 0x47)
            let file = site.appendingPathComponent("segment.ts")
            try Data(served.body).write(to: file)
            #expect(try TestMedia.packetHashes(file.path).count > 50, "the segment after the reload plays")
        }
        _ = try await TestMedia.offloaded { player.stop() }
    }

    @Test("a DASH source's audio tracks (seed 000 §5.3.5): --json lists each adaptation set's language and codec; --audio fr plays the French set, the English one is never fetched")
    func audioTracks() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("play-dash-audio")
        defer { server.stop(); origin.stop() }
        let french = try await TestMedia.offloaded { try TestMedia.make("play-dash-audio-fr", seconds: 4, extra: ["-metadata:s:a:0", "language=fra"], video: false) }
        let url = origin.url("dubbed/base.mpd")
        try await TestMedia.offloaded { () throws -> Void in
            let folder = site.appendingPathComponent("dubbed")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Self.segmentBaseMPD(in: folder, tracks: [("v.mp4", input, "0:v", nil), ("en.mp4", input, "0:a", "en"), ("fr.mp4", french, "0:a", "fr")])
            let described = try CLIRunner.run(["play", url, "--data-dir", data, "--json", "--exec", "true"])
            let line = try #require(described.stdout.split(separator: "\n").first.map(String.init), "\(described.stderr)")
            let info = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            let tracks = try #require(info["audioTracks"] as? [[String: Any]], "\(line)")
            #expect(tracks.compactMap { $0["language"] as? String } == ["en", "fr"] && tracks.allSatisfy { $0["codec"] as? String == "mp4a.40.2" }, "\(line)")
        }
        let before = origin.log.count
        let player = try await TestMedia.offloaded { try PlayCommandTests.Player([url, "--data-dir", data, "--audio", "fr"]) }
        try await TestMedia.offloaded { () throws -> Void in
            let master = try PlayCommandTests.fetch(player.url)
            let base = try #require(URL(string: player.url))
            let media = try #require(String(decoding: master.body, as: UTF8.self).split(separator: "\n").first { !$0.hasPrefix("#") }
                .flatMap { URL(string: String($0), relativeTo: base)?.absoluteURL })
            let playlist = try PlayCommandTests.fetch(media.absoluteString)
            let segment = try #require(String(decoding: playlist.body, as: UTF8.self).split(separator: "\n").first { !$0.hasPrefix("#") }
                .flatMap { URL(string: String($0), relativeTo: media)?.absoluteURL })
            #expect(try PlayCommandTests.fetch(segment.absoluteString).status == 200)
        }
        _ = try await TestMedia.offloaded { player.stop() }
        let fetched = origin.log.dropFirst(before).map(\.path)
        #expect(fetched.contains { $0.hasSuffix("fr.mp4") } && !fetched.contains { $0.hasSuffix("en.mp4") }, "\(fetched)")
    }
}
