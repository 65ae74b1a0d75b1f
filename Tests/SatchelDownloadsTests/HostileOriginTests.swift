import Foundation
@testable import SatchelDownloads
@testable import SatchelStreams
import SatchelTestSupport
import Testing

/// An origin that tries to make the engine write, read, count or delete outside the asset's folder.
@Suite("Download engine: a hostile origin stays inside the asset's folder")
struct PathEscapeTests {
    /// A media playlist whose one segment has `uri`.
    static func playlist(_ uri: String) -> String {
        "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXTINF:2.0,\n\(uri)\n#EXT-X-ENDLIST\n"
    }

    @Test("the local path is the URL path decoded once, normalised, and never outside the folder", arguments: [
        ("a/%2e%2e/b.ts", "b.ts"), ("a/./b.ts", "a/b.ts"), ("%252e%252e/x.ts", "%2e%2e/x.ts"), ("a%2Fb.ts", "a_b.ts"),
        ("seg%20one.ts", "seg one.ts"),
    ])
    func normalised(relative: String, expected: String) throws {
        let root = try #require(URL(string: "http://o.example/v/master.m3u8"))
        let url = try #require(URL(string: relative, relativeTo: root)?.absoluteURL)
        #expect(try LocalPath.map(url, root: root) == expected)
    }

    @Test("a path that would leave the folder is invalidContent", arguments: [
        "%2e%2e/%2e%2e/tmp/x/ESC.ts", "%2E%2E/%2E%2E/tmp/x/ESC.ts", "a/%2e%2e/%2e%2e/ESC.ts", "%2e%2e%2f%2e%2e/ESC.ts",
    ])
    func escapes(relative: String) throws {
        let root = try #require(URL(string: "http://o.example/v/master.m3u8"))
        let url = try #require(URL(string: relative, relativeTo: root)?.absoluteURL)
        if relative.contains("%2f") {  // an encoded slash is part of one name, not a separator
            #expect(try LocalPath.map(url, root: root) == ".._../ESC.ts")
            return
        }
        #expect(throws: StreamError.self) { try LocalPath.map(url, root: root) }
        // An external host's path is decoded once too: %252e stays a literal "%2e".
        let external = try #require(URL(string: "http://cdn.example/\(relative.replacingOccurrences(of: "%2", with: "%252"))"))
        #expect(!(try LocalPath.map(external, root: root)).split(separator: "/").contains(".."))
    }

    @Test("HLS and DASH manifests naming escaping paths are refused at add; nothing outside is written, counted or deleted")
    func refusedAtAdd() async throws {
        let world = try await DownloadWorld.make("escape")
        defer { world.origin.stop() }
        // A file already where an escaped path would land: it must be neither overwritten, counted nor deleted.
        let outside = world.directory.appendingPathComponent("outside/x")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try Data("precious".utf8).write(to: outside.appendingPathComponent("ESC.ts"))
        let segment = Array(try await TestMedia.contents(of: world.site.appendingPathComponent("asset/video_0/segment_0.ts")))
        // From data/assets/<id>/ four levels up is the test directory.
        let escape = "%2e%2e/%2e%2e/%2e%2e/%2e%2e/outside/x/ESC.ts"
        for (name, uri) in [("lower", escape), ("upper", escape.replacingOccurrences(of: "%2e", with: "%2E"))] {
            try FileManager.default.createDirectory(at: world.site.appendingPathComponent(name), withIntermediateDirectories: true)
            try Self.playlist(uri).write(to: world.site.appendingPathComponent("\(name)/index.m3u8"), atomically: true, encoding: .utf8)
            world.origin.serve(rawPath: "/\(name)/\(uri)", bytes: segment)
        }
        try FileManager.default.createDirectory(at: world.site.appendingPathComponent("dash"), withIntermediateDirectories: true)
        let mpd = """
            <?xml version="1.0"?>
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S">
              <Period><AdaptationSet contentType="video" mimeType="video/mp4">
                <Representation id="v" bandwidth="1000">
                  <SegmentTemplate timescale="1" duration="2" startNumber="1" media="%2e%2e/%2e%2e/%2e%2e/%2e%2e/outside/x/$Number$.m4s"/>
                </Representation>
              </AdaptationSet></Period>
            </MPD>
            """
        try mpd.write(to: world.site.appendingPathComponent("dash/manifest.mpd"), atomically: true, encoding: .utf8)

        let manager = try await world.manager()
        for path in ["lower/index.m3u8", "upper/index.m3u8", "dash/manifest.mpd"] {
            let error = await #expect(throws: DownloadError.self) { try await manager.add(url: world.origin.url(path), id: "e") }
            guard case let .unsafeResource(.invalidContent(_, reason))? = error else { Issue.record("\(String(describing: error))"); continue }
            #expect(reason.contains("leave the asset's folder"))
        }
        #expect(try await manager.assets().isEmpty)
        #expect(try String(contentsOf: outside.appendingPathComponent("ESC.ts"), encoding: .utf8) == "precious")
        #expect(TestMedia.files(under: outside) == ["ESC.ts"])
        await manager.close()
    }

    @Test("a second host's %252e path is stored inside the folder under its literal name")
    func doubleEncoded() async throws {
        let world = try await DownloadWorld.make("escape2")
        defer { world.origin.stop() }
        let segment = Array(try await TestMedia.contents(of: world.site.appendingPathComponent("asset/video_0/segment_0.ts")))
        let other = world.origin.baseURL.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let raw = "/%252e%252e/%252e%252e/%252e%252e/%252e%252e/%252e%252e/outside/ESC.ts"
        world.origin.serve(rawPath: raw, bytes: segment)
        try FileManager.default.createDirectory(at: world.site.appendingPathComponent("ext"), withIntermediateDirectories: true)
        try Self.playlist(other + raw).write(to: world.site.appendingPathComponent("ext/index.m3u8"), atomically: true, encoding: .utf8)
        let manager = try await world.manager()
        try await manager.add(url: world.origin.url("ext/index.m3u8"), id: "x")
        #expect(await manager.run().allComplete)
        let files = TestMedia.files(under: world.assetDirectory("x"))
        #expect(files.contains { $0.hasSuffix("%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/outside/ESC.ts") && $0.hasPrefix("external/localhost_") }, "\(files)")
        #expect(!FileManager.default.fileExists(atPath: world.directory.appendingPathComponent("outside").path))
        try await manager.remove("x")
        #expect(!FileManager.default.fileExists(atPath: world.assetDirectory("x").path))
        await manager.close()
    }

    @Test("symbolic links planted in the asset's folder are never followed: not counted, not written through, not deleted through")
    func symlinks() async throws {
        let world = try await DownloadWorld.make("symlink")
        defer { world.origin.stop() }
        let manager = try await world.manager()
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "a")
        let outside = world.directory.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let bait = outside.appendingPathComponent("bait.ts")
        try Data("precious".utf8).write(to: bait)
        let folder = world.assetDirectory("a")
        // A link where a folder should be, and a link where a finished segment should be.
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("video_0"), withDestinationURL: outside)
        let audio = try #require(TestMedia.files(under: world.site.appendingPathComponent("asset")).first { $0.hasPrefix("audio_0/") && $0.hasSuffix(".ts") })
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("audio_0"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent(audio), withDestinationURL: bait)

        let before = try await manager.progress("a")
        #expect(before.completedFiles == 0 && before.bytes == 0, "a link is not a complete file")
        let summary = await manager.run()
        #expect(!summary.allComplete)
        let asset = try await manager.asset("a")
        guard case let .invalidContent(_, reason)? = asset.failure else { Issue.record("\(String(describing: asset.failure))"); return }
        #expect(reason.contains("symbolic link"))
        #expect(TestMedia.files(under: outside) == ["bait.ts"], "nothing written through the folder link")
        #expect(try String(contentsOf: bait, encoding: .utf8) == "precious")
        // Without the folder link the asset completes; the link over a segment is replaced by the real file.
        try FileManager.default.removeItem(at: folder.appendingPathComponent("video_0"))
        try await manager.clearRetryCount("a")
        #expect(await manager.run().allComplete)
        let replaced = try FileManager.default.attributesOfItem(atPath: folder.appendingPathComponent(audio).path)
        #expect(replaced[.type] as? FileAttributeType == .typeRegular)
        #expect(try String(contentsOf: bait, encoding: .utf8) == "precious", "not written through the file link")
        try world.expectMediaMatchesOrigin("a")
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("link-to-outside"), withDestinationURL: outside)

        try await manager.remove("a")
        #expect(try String(contentsOf: bait, encoding: .utf8) == "precious", "removal deletes links, never their targets")
        #expect(!FileManager.default.fileExists(atPath: folder.path))
        await manager.close()
    }
}

/// One-line manifests that used to trap or hang `download add`: each is a typed error, at once.
@Suite("Download engine: hostile manifests", .timeLimit(.minutes(1)))
struct HostileManifestTests {
    static func mpd(_ representation: String, duration: String = "PT10S") -> String {
        """
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="\(duration)">
        <Period><AdaptationSet contentType="video" mimeType="video/mp4"><Representation id="v" bandwidth="1">\(representation)</Representation>
        </AdaptationSet></Period></MPD>
        """
    }

    static let dashCases: [(String, String)] = [
        ("timeline t near UInt64.max", mpd(#"<SegmentTemplate media="$Time$.m4s"><SegmentTimeline><S t="18446744073709551610" d="10" r="5"/></SegmentTimeline></SegmentTemplate>"#)),
        ("startNumber UInt64.max", mpd(#"<SegmentTemplate media="$Number$.m4s" startNumber="18446744073709551615" duration="1"/>"#)),
        ("400 nines of duration", mpd(#"<SegmentTemplate media="$Number$.m4s" duration="1"/>"#, duration: "PT" + String(repeating: "9", count: 400) + "S")),
        ("timescale UInt64.max", mpd(#"<SegmentTemplate media="$Number$.m4s" timescale="18446744073709551615" duration="1"/>"#)),
        ("timescale = duration = 1e19", mpd(#"<SegmentTemplate media="$Number$.m4s" timescale="10000000000000000000" duration="10000000000000000000"/>"#)),
        ("mediaRange to Int64.max", mpd(#"<SegmentList duration="1"><SegmentURL media="a.m4s" mediaRange="0-9223372036854775807"/></SegmentList>"#)),
        ("r of 10^12", mpd(#"<SegmentTemplate media="$Number$.m4s"><SegmentTimeline><S d="1" r="1000000000000"/></SegmentTimeline></SegmentTemplate>"#)),
        ("format width of 999999999", mpd(#"<SegmentTemplate media="$Number%0999999999d$.m4s" duration="1"/>"#)),
        ("more segments than the cap", mpd(#"<SegmentTemplate media="$Number$.m4s" duration="1"/>"#, duration: "PT300000S")),
    ]

    @Test("DASH", arguments: dashCases.map(\.0))
    func dash(name: String) throws {
        let text = try #require(Self.dashCases.first { $0.0 == name }?.1)
        #expect {
            _ = try DASHDownloadPlanner.plan(mpd: text, url: URL(fileURLWithPath: "/v/manifest.mpd"), options: PlanOptions())
        } throws: { error in
            guard case StreamError.malformedManifest = error else { return false }
            return true
        }
    }

    @Test("HLS byte range at Int64.max, an infinite EXTINF, and more segments than the cap")
    func hls() throws {
        let url = try #require(URL(string: "http://o.example/v/index.m3u8"))
        let huge = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-BYTERANGE:9223372036854775807@9223372036854775807\na.ts\n#EXT-X-ENDLIST\n"
        let infinite = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:1e400,\na.ts\n#EXT-X-ENDLIST\n"
        let many = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n" + (0..<50).map { "#EXTINF:2,\n\($0).ts\n" }.joined() + "#EXT-X-ENDLIST\n"
        for (text, options) in [(huge, PlanOptions()), (infinite, PlanOptions()), (many, PlanOptions(resourceLimit: 49))] {
            #expect {
                _ = try HLSDownloadPlanner.plan(mediaPlaylist: text, url: url, root: url, options: options)
            } throws: { error in
                guard case StreamError.malformedManifest = error else { return false }
                return true
            }
        }
        #expect(try HLSDownloadPlanner.plan(mediaPlaylist: many, url: url, root: url, options: PlanOptions(resourceLimit: 50)).resources.count == 50)
    }

    @Test("Smooth r of Int64.max and t near UInt64.max")
    func smooth() throws {
        let url = try #require(URL(string: "http://o.example/v/Manifest"))
        func manifest(_ c: String) -> String {
            """
            <SmoothStreamingMedia MajorVersion="2" MinorVersion="2" Duration="100"><StreamIndex Type="video" Url="q({bitrate})/f({start time})">
            <QualityLevel Index="0" Bitrate="1000" FourCC="H264"/>\(c)</StreamIndex></SmoothStreamingMedia>
            """
        }
        for c in [#"<c t="0" d="1" r="9223372036854775807"/>"#, #"<c t="18446744073709551610" d="10" r="3"/>"#] {
            #expect {
                _ = try SmoothDownloadPlanner.plan(manifest: manifest(c), url: url, options: PlanOptions())
            } throws: { error in
                guard case StreamError.malformedManifest = error else { return false }
                return true
            }
        }
    }
}

@Suite("Download index: plans stored compactly")
struct PlanStorageTests {
    @Test("the hand-written plan JSON decodes to the same plan; rows written by earlier versions still decode")
    func roundTrip() throws {
        let plan = DownloadPlan(format: .hls, mainPath: "master.m3u8",
                                manifests: [.init(path: "master.m3u8", text: "#EXTM3U\n\"quoted\" \\ tab\there\u{1}\n")],
                                resources: [
                                    DownloadResource(url: "http://o/k?t=1", localPath: "keys/k_1", kind: .key),
                                    DownloadResource(url: "http://o/a.ts", localPath: "a.0-100.ts", range: .init(offset: 0, length: 100), kind: .segment,
                                                     duration: 2.002, group: "v"),
                                    DownloadResource(url: "http://o/b.mp4", localPath: "line\nbreak \"b\".mp4", kind: .file, expectedSize: 5,
                                                     permittedMimeTypes: ["video/*", "application/octet-stream"]),
                                ], totalDuration: 12.5)
        let decoded = try JSONDecoder().decode(DownloadPlan.self, from: Data(plan.encodedJSON()))
        #expect(decoded == plan)
        #expect(try JSONDecoder().decode(DownloadPlan.self, from: JSONEncoder().encode(plan)) == plan, "Codable agrees")
        let old = #"{"format":"file","mainPath":"f.mp4","manifests":[],"resources":[{"url":"http://o/f.mp4","localPath":"f.mp4","kind":"file","expectedSize":9}]}"#
        let legacy = try JSONDecoder().decode(DownloadPlan.self, from: Data(old.utf8))
        #expect(legacy.resources == [DownloadResource(url: "http://o/f.mp4", localPath: "f.mp4", kind: .file, expectedSize: 9)])
    }
}
