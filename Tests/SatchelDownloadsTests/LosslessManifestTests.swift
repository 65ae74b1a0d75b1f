import Foundation
import SatchelDownloads
import SatchelMedia
import SatchelTestSupport
import Testing

/// A download keeps every tag, attribute, element and comment of the origin's manifests: only URIs change,
/// plus what the download itself changes (entries not downloaded go, byte ranges that became files go).
@Suite("Download engine: manifests survive a download losslessly")
struct LosslessManifestTests {
    static let master = """
    #EXTM3U
    # a comment the origin wrote
    #EXT-X-VERSION:7
    #EXT-X-INDEPENDENT-SEGMENTS
    #EXT-X-START:TIME-OFFSET=2.0,PRECISE=YES
    #EXT-X-SESSION-DATA:DATA-ID="com.example.title",VALUE="Rich",LANGUAGE="en"
    #EXT-X-SESSION-DATA:DATA-ID="com.example.info",URI="info.json"
    #EXT-X-ACME-CHANNEL:ID="7",MODE=fast
    #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,URI="audio/en.m3u8"
    #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="Deutsch",LANGUAGE="de",DEFAULT=NO,AUTOSELECT=YES,URI="audio/de.m3u8"
    #EXT-X-STREAM-INF:BANDWIDTH=2000000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720,AUDIO="aud"
    video/hi.m3u8
    #EXT-X-STREAM-INF:BANDWIDTH=500000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=640x360,AUDIO="aud"
    video/lo.m3u8
    #EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=100000,CODECS="avc1.64001f",URI="video/iframes.m3u8"

    """
    static let video = """
    #EXTM3U
    #EXT-X-VERSION:7
    #EXT-X-TARGETDURATION:2
    #EXT-X-PLAYLIST-TYPE:VOD
    #EXT-X-MAP:URI="init.mp4",BYTERANGE="200@0"
    #EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:00.000Z
    #EXT-X-DATERANGE:ID="ad1",START-DATE="2026-11-23T10:00:01.000Z",DURATION=1.0,X-COM-EXAMPLE-AD="yes"
    #EXTINF:2.000,first part
    #EXT-X-BYTERANGE:1000@200
    all.m4s
    # a vendor comment
    #EXT-X-ACME-MARK:POS=1
    #EXTINF:2.000,
    #EXT-X-BYTERANGE:1000
    all.m4s
    #EXT-X-ENDLIST

    """
    /// CR LF line endings, kept as they are.
    static let audio = "#EXTM3U\r\n#EXT-X-TARGETDURATION:2\r\n#EXT-X-ACME-LOUDNESS:-23\r\n#EXTINF:2.0,\r\nen/1.m4s\r\n#EXTINF:2.0,\r\nen/2.m4s\r\n#EXT-X-ENDLIST\r\n"

    static let mpd = """
    <?xml version="1.0" encoding="UTF-8"?>
    <!-- produced by a test: kept -->
    <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:acme="urn:acme:2026" type="static" mediaPresentationDuration="PT4S" minBufferTime="PT2S">
      <acme:Info acme:channel="7">kept &amp; unchanged</acme:Info>
      <BaseURL>./</BaseURL>
      <Period id="p0" start="PT0S">
        <EventStream schemeIdUri="urn:example:events" timescale="1">
          <Event presentationTime="1" duration="1" id="1">hello &amp; welcome</Event>
        </EventStream>
        <AdaptationSet contentType="video" mimeType="video/mp4" segmentAlignment="true">
          <Label>Main video</Label>
          <Role schemeIdUri="urn:mpeg:dash:role:2011" value="main"/>
          <SupplementalProperty schemeIdUri="urn:mpeg:dash:adaptation-set-switching:2016" value="2"/>
          <SegmentTemplate timescale="1" duration="2" startNumber="1" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/>
          <Representation id="v-hi" bandwidth="2000000" codecs="avc1.64001f" width="1280" height="720"/>
          <Representation id="v-lo" bandwidth="500000" codecs="avc1.64001f" width="640" height="360"/>
        </AdaptationSet>
        <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
          <Accessibility schemeIdUri="urn:tva:metadata:cs:AudioPurposeCS:2007" value="1"/>
          <Representation id="a-en" bandwidth="64000" codecs="mp4a.40.2">
            <BaseURL>audio/</BaseURL>
            <SegmentList duration="2" timescale="1">
              <Initialization sourceURL="en.mp4" range="0-99"/>
              <SegmentURL media="en.mp4" mediaRange="100-1099"/>
              <SegmentURL media="en.mp4" mediaRange="1100-2099"/>
            </SegmentList>
          </Representation>
        </AdaptationSet>
        <AdaptationSet contentType="text" mimeType="application/mp4" lang="fr">
          <Representation id="t-fr" bandwidth="1000"><BaseURL>fr.mp4</BaseURL></Representation>
        </AdaptationSet>
      </Period>
    </MPD>

    """

    static func write(_ text: String, _ path: String, in site: URL) throws {
        let url = site.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    static func media(_ count: Int, _ path: String, in site: URL) throws {
        let url = site.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }).write(to: url)
    }

    /// Every origin line (but `removed`) appears in the local manifest in order; on `uriLines` a URI may differ
    /// (a relative URI often stays as it was), on every other line nothing may.
    static func expectOnlyURIsDiffer(origin: String, local: String, removed: Set<Int>, uriLines: Set<Int>,
                                     sourceLocation: SourceLocation = #_sourceLocation) {
        let originLines = origin.split(separator: "\n", omittingEmptySubsequences: false).enumerated().filter { !removed.contains($0.offset) }
        let localLines = local.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(originLines.count == localLines.count, "\(local)", sourceLocation: sourceLocation)
        for ((number, before), after) in zip(originLines, localLines) {
            if uriLines.contains(number) {
                #expect(normalized(before) == normalized(after), "line \(number): \(after)", sourceLocation: sourceLocation)
            } else {
                #expect(before == after, "line \(number) changed: \(after)", sourceLocation: sourceLocation)
            }
        }
    }

    /// A line with its URIs blanked (quoted URI attributes, a whole URI line).
    static func normalized(_ line: Substring) -> String {
        if !line.hasPrefix("#"), !line.contains("<") { return "<uri line>" }
        var text = String(line)
        for name in ["URI", "media", "sourceURL"] {
            text = text.replacingOccurrences(of: "\(name)=\"[^\"]*\"", with: "\(name)=\"\"", options: .regularExpression)
        }
        return text.replacingOccurrences(of: " mediaRange=\"[^\"]*\"", with: "", options: .regularExpression)
            .replacingOccurrences(of: ",BYTERANGE=\"[^\"]*\"", with: "", options: .regularExpression)
            .replacingOccurrences(of: "<BaseURL>[^<]*</BaseURL>", with: "<BaseURL/>", options: .regularExpression)
    }

    @Test("HLS: session data, start, date ranges, program dates, vendor tags, comments, I-frame playlists and CR LF survive")
    func hls() async throws {
        let directory = try TestMedia.temporaryDirectory("lossless-hls")
        let site = directory.appendingPathComponent("site")
        try Self.write(Self.master, "rich/master.m3u8", in: site)
        try Self.write(Self.video, "rich/video/hi.m3u8", in: site)
        try Self.write(Self.audio, "rich/audio/en.m3u8", in: site)
        try Self.media(200 + 2000, "rich/video/all.m4s", in: site)
        try Self.media(200, "rich/video/init.mp4", in: site)
        for n in 1...2 { try Self.media(500, "rich/audio/en/\(n).m4s", in: site) }
        let world = DownloadWorld(directory: directory, site: site, origin: try await TestOrigin.start(root: site))
        defer { world.origin.stop() }
        let manager = try await world.manager()
        try await manager.add(url: world.origin.url("rich/master.m3u8"), id: "rich")
        let plan = world.assetDirectory("rich").appendingPathComponent(".satchel/plan.json")
        let inode = try FileManager.default.attributesOfItem(atPath: plan.path)[.systemFileNumber] as? Int
        try await manager.pause("rich")
        try await manager.resume("rich")
        #expect(await manager.run().allComplete)
        await manager.close()
        // The plan (with the manifests' text) lives in the asset's folder, written once; the index holds metadata only.
        #expect(try FileManager.default.attributesOfItem(atPath: plan.path)[.systemFileNumber] as? Int == inode, "state changes never rewrite the plan")
        #expect(try String(contentsOf: plan, encoding: .utf8).contains("EXT-X-ACME-CHANNEL"))
        for name in try FileManager.default.contentsOfDirectory(atPath: world.dataDirectory) where name.hasPrefix("downloads.sqlite") {
            let bytes = try await TestMedia.contents(of: URL(fileURLWithPath: world.dataDirectory).appendingPathComponent(name))
            #expect(bytes.range(of: Data("EXT-X-ACME-CHANNEL".utf8)) == nil, "\(name) holds no manifest text")
        }

        let local = { (path: String) throws -> String in
            try String(contentsOf: world.assetDirectory("rich").appendingPathComponent(path), encoding: .utf8)
        }
        // Master: the German rendition and the low variant (its STREAM-INF and URI lines) go; four URIs change.
        Self.expectOnlyURIsDiffer(origin: Self.master, local: try local("master.m3u8"), removed: [9, 12, 13], uriLines: [6, 8, 11, 14])
        let master = try local("master.m3u8")
        #expect(master.contains("URI=\"\(world.origin.url("rich/video/iframes.m3u8"))\""), "the I-frame playlist is reached online")
        #expect(master.contains("URI=\"\(world.origin.url("rich/info.json"))\""))
        // Media playlist: the byte ranges became files of their own, so their lines go; the map loses BYTERANGE.
        Self.expectOnlyURIsDiffer(origin: Self.video, local: try local("video/hi.m3u8"), removed: [8, 13], uriLines: [4, 9, 14])
        #expect(try local("video/hi.m3u8").contains("\nall.200-1000.m4s\n"))
        #expect(try local("video/hi.m3u8").contains("#EXT-X-MAP:URI=\"init.0-200.mp4\"\n"))
        // CR LF endings and vendor tags stay, and the segments of a CR LF playlist are found and fetched.
        Self.expectOnlyURIsDiffer(origin: Self.audio, local: try local("audio/en.m3u8"), removed: [], uriLines: [4, 6])
        #expect(try local("audio/en.m3u8") == Self.audio)
        #expect(Set(TestMedia.files(under: world.assetDirectory("rich"))).isSuperset(of: ["audio/en/1.m4s", "audio/en/2.m4s", "video/init.0-200.mp4",
                                                                                           "video/all.200-1000.m4s", "video/all.1200-1000.m4s"]))
    }

    @Test("DASH: EventStream, Label, Role, Accessibility, SupplementalProperty, other namespaces and comments survive")
    func dash() async throws {
        let directory = try TestMedia.temporaryDirectory("lossless-dash")
        let site = directory.appendingPathComponent("site")
        try Self.write(Self.mpd, "rich/manifest.mpd", in: site)
        try Self.media(100, "rich/v-hi/init.mp4", in: site)
        for n in 1...2 { try Self.media(700, "rich/v-hi/\(n).m4s", in: site) }
        try Self.media(2100, "rich/audio/en.mp4", in: site)
        let world = DownloadWorld(directory: directory, site: site, origin: try await TestOrigin.start(root: site))
        defer { world.origin.stop() }
        let manager = try await world.manager()
        try await manager.add(url: world.origin.url("rich/manifest.mpd"), id: "rich")
        #expect(await manager.run().allComplete)
        await manager.close()

        let local = try String(contentsOf: world.assetDirectory("rich").appendingPathComponent("manifest.mpd"), encoding: .utf8)
        // The low video representation and the French text set (not asked for) go whole; the SegmentURLs point at their pieces.
        Self.expectOnlyURIsDiffer(origin: Self.mpd, local: local, removed: [15, 28, 29, 30], uriLines: [4, 20, 22, 23, 24])
        #expect(local.contains(#"<SegmentURL media="en.100-1000.mp4"/>"#))
        let files = TestMedia.files(under: world.assetDirectory("rich"))
        #expect(Set(files).isSuperset(of: ["audio/en.mp4", "audio/en.100-1000.mp4", "audio/en.1100-1000.mp4", "v-hi/init.mp4", "v-hi/1.m4s", "v-hi/2.m4s"]),
                "\(files)")
    }

    static let periods = """
    <?xml version="1.0" encoding="UTF-8"?>
    <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT10S" minBufferTime="PT2S">
      <Period id="main" start="PT0S">
        <AdaptationSet contentType="video" mimeType="video/mp4">
          <SegmentTemplate timescale="1" duration="2" startNumber="1" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Number$.m4s"/>
          <Representation id="v" bandwidth="500000" codecs="avc1.64001f" width="640" height="360"/>
        </AdaptationSet>
      </Period>
      <Period id="break" start="PT4S">
        <BaseURL>ad/</BaseURL>
        <AdaptationSet contentType="video" mimeType="video/mp4">
          <SegmentTemplate timescale="1000" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Time$.m4s">
            <SegmentTimeline><S t="0" d="2000" r="-1"/></SegmentTimeline>
          </SegmentTemplate>
          <Representation id="ad-v" bandwidth="400000" codecs="avc1.64001f" width="640" height="360"/>
        </AdaptationSet>
      </Period>
    </MPD>

    """

    @Test("DASH: every period is downloaded and kept, each with its own duration (a template is not stretched over the presentation)")
    func multiPeriod() async throws {
        let model = try DASHManifest(parsing: Self.periods)
        #expect(model.periods.map(\.id) == ["main", "break"] && model.duration(ofPeriod: 0) == 4 && model.duration(ofPeriod: 1) == 6)
        let directory = try TestMedia.temporaryDirectory("lossless-periods")
        let site = directory.appendingPathComponent("site")
        try Self.write(Self.periods, "show/manifest.mpd", in: site)
        try Self.media(100, "show/v/init.mp4", in: site)
        for n in 1...2 { try Self.media(500, "show/v/\(n).m4s", in: site) }
        try Self.media(100, "show/ad/ad-v/init.mp4", in: site)
        for t in [0, 2000, 4000] { try Self.media(300, "show/ad/ad-v/\(t).m4s", in: site) }
        let world = DownloadWorld(directory: directory, site: site, origin: try await TestOrigin.start(root: site))
        defer { world.origin.stop() }
        let manager = try await world.manager()
        let asset = try await manager.add(url: world.origin.url("show/manifest.mpd"), id: "show")
        #expect(asset.plan.resources.filter { $0.kind == .segment }.map(\.localPath)
                    == ["v/1.m4s", "v/2.m4s", "ad/ad-v/0.m4s", "ad/ad-v/2000.m4s", "ad/ad-v/4000.m4s"], "one track across both periods, in order")
        #expect(await manager.run().allComplete)
        let progress = try await manager.progress("show")
        #expect(progress.cachedDuration == 10 && progress.totalDuration == 10)
        await manager.close()
        let local = try String(contentsOf: world.assetDirectory("show").appendingPathComponent("manifest.mpd"), encoding: .utf8)
        Self.expectOnlyURIsDiffer(origin: Self.periods, local: local, removed: [], uriLines: [9])
        #expect(world.origin.log.filter { $0.path.hasSuffix(".m4s") }.count == 5, "no segment past a period's end is asked for")
    }
}
