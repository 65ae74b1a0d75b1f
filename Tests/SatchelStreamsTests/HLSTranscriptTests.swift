import Foundation
@testable import SatchelStreams
import Testing

/// DASH to HLS, the rules of seed 002's playlist proxy, on MPDs written here.
@Suite struct HLSTranscriptTests {
    static let origin = URL(string: "https://cdn.example/show/manifest.mpd")!

    /// An MPD around `periods` (Period elements), static unless `dynamic`.
    static func mpd(_ periods: String, dynamic: Bool = false, duration: String = "PT8S") -> String {
        """
        <?xml version="1.0"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="\(dynamic ? "dynamic" : "static")" mediaPresentationDuration="\(duration)">
        \(periods)
        </MPD>
        """
    }

    /// A video set of two representations (timeline: 2.5 s, 2.5 s, 3 s at 1000 ticks/s) and an English and a
    /// French audio set.
    static let period = """
      <Period id="a" start="PT0S">
        <AdaptationSet contentType="video" mimeType="video/mp4">
          <SegmentTemplate timescale="1000" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/$Time$.m4s">
            <SegmentTimeline><S t="0" d="2500" r="1"/><S d="3000"/></SegmentTimeline>
          </SegmentTemplate>
          <Representation id="hi" bandwidth="2000000" codecs="avc1.64001f" width="1280" height="720"/>
          <Representation id="lo" bandwidth="500000" codecs="avc1.4d401e" width="640" height="360"/>
        </AdaptationSet>
        <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
          <SegmentTemplate timescale="1000" initialization="en/init.mp4" media="en/$Number$.m4s" startNumber="1">
            <SegmentTimeline><S t="0" d="2500" r="1"/><S d="3000"/></SegmentTimeline>
          </SegmentTemplate>
          <Representation id="en" bandwidth="64000" codecs="mp4a.40.2"/>
        </AdaptationSet>
        <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="fr">
          <SegmentTemplate timescale="1000" initialization="fr/init.mp4" media="fr/$Number$.m4s" startNumber="1">
            <SegmentTimeline><S t="0" d="2500" r="1"/><S d="3000"/></SegmentTimeline>
          </SegmentTemplate>
          <Representation id="fr" bandwidth="96000" codecs="mp4a.40.2"/>
        </AdaptationSet>
      </Period>
    """

    @Test("a static MPD: one EXT-X-STREAM-INF per video representation (PROGRAM-ID=1, BANDWIDTH of video and audio, CODECS, RESOLUTION), EXTINF rounded up, TARGETDURATION the largest, ENDLIST in every playlist; segments name one video and one audio DASH segment, resolved against the MPD's URL")
    func staticPresentation() throws {
        let transcript = try HLSTranscript(mpd: Self.mpd(Self.period), url: Self.origin)
        #expect(!transcript.isDynamic && !transcript.isProtected)
        #expect(transcript.masterPlaylist() == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-STREAM-INF:PROGRAM-ID=1,BANDWIDTH=564000,CODECS="avc1.4d401e,mp4a.40.2",RESOLUTION=640x360
            v0.m3u8
            #EXT-X-STREAM-INF:PROGRAM-ID=1,BANDWIDTH=2064000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=1280x720
            v1.m3u8
            #EXT-X-ENDLIST

            """)
        #expect(transcript.mediaPlaylist(1) == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:3
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXTINF:3,
            v1/p0-0.ts
            #EXTINF:3,
            v1/p0-2500.ts
            #EXTINF:3,
            v1/p0-5000.ts
            #EXT-X-ENDLIST

            """)
        #expect(transcript.mediaPlaylist(2) == nil)
        guard case let .segment(segment)? = transcript.resource(".hls/v1/p0-2500.ts") else { Issue.record("no segment"); return }
        #expect(segment.video?.media.url.absoluteString == "https://cdn.example/show/hi/2500.m4s")
        #expect(segment.video?.initialization?.url.absoluteString == "https://cdn.example/show/hi/init.mp4")
        #expect(segment.audio.map(\.media.url.absoluteString) == ["https://cdn.example/show/en/2.m4s"], "the first audio set without a language asked")
        #expect(transcript.resource(".hls/master.m3u8") == .master && transcript.resource(".hls/v0.m3u8") == .playlist(0))
        for unknown in [".hls/v9.m3u8", ".hls/v0/p0-1.ts", ".hls/v0/../v1/p0-0.ts", "hls/master.m3u8", ".hls/x"] {
            #expect(transcript.resource(unknown) == nil, "\(unknown)")
        }
        // Audio in a wanted language.
        let french = try HLSTranscript(mpd: Self.mpd(Self.period), url: Self.origin, languages: ["fr"])
        #expect(french.variants[0].segments[0].audio.map(\.media.url.lastPathComponent) == ["1.m4s"]
                && french.variants[0].segments[0].audio.first?.media.url.pathComponents.contains("fr") == true)
        #expect(french.variants[0].bandwidth == 596_000)
    }

    @Test("several periods: the first period's representations found again by id, EXT-X-DISCONTINUITY before each later period's first segment only, BaseURLs of MPD, period, set and representation; a protected set is protected")
    func periods() throws {
        let second = """
          <Period id="b" duration="PT4S">
            <BaseURL>ad/</BaseURL>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc"/>
              <BaseURL>v/</BaseURL>
              <Representation id="lo" bandwidth="400000" codecs="avc1.4d401e">
                <SegmentTemplate timescale="10" duration="20" initialization="i.mp4" media="$Number%03d$.m4s" startNumber="7"/>
              </Representation>
              <Representation id="hi" bandwidth="1800000" codecs="avc1.64001f">
                <BaseURL>high/</BaseURL>
                <SegmentTemplate timescale="10" duration="20" initialization="i.mp4" media="$Number%03d$.m4s" startNumber="7"/>
              </Representation>
            </AdaptationSet>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
              <Representation id="en" bandwidth="64000" codecs="mp4a.40.2">
                <SegmentTemplate timescale="10" duration="20" initialization="a/i.mp4" media="a/$Number$.m4s"/>
              </Representation>
            </AdaptationSet>
          </Period>
        """
        let first = Self.period.replacingOccurrences(of: "start=\"PT0S\"", with: "duration=\"PT8S\"")
        let transcript = try HLSTranscript(mpd: Self.mpd(first + second, duration: "PT12S"), url: Self.origin)
        #expect(transcript.isProtected)
        let high = try #require(transcript.variants.last)
        #expect(high.segments.map(\.name) == ["p0-0.ts", "p0-2500.ts", "p0-5000.ts", "p1-0.ts", "p1-20.ts"])
        #expect(high.segments.map(\.discontinuity) == [false, false, false, true, false])
        #expect(high.segments.map(\.sequence) == [0, 1, 2, 3, 4])
        #expect(high.segments[3].video?.media.url.absoluteString == "https://cdn.example/show/ad/v/high/007.m4s")
        #expect(transcript.variants[0].segments[4].video?.media.url.absoluteString == "https://cdn.example/show/ad/v/008.m4s")
        #expect(high.segments[4].audio.first?.media.url.absoluteString == "https://cdn.example/show/ad/a/2.m4s")
        let playlist = try #require(transcript.mediaPlaylist(1))
        #expect(playlist.components(separatedBy: "#EXT-X-DISCONTINUITY\n#EXTINF:2,\nv1/p1-0.ts").count == 2, "\(playlist)")
        #expect(playlist.components(separatedBy: "DISCONTINUITY").count == 2)
    }

    @Test("adaptation sets: Role main wins, sets whose codecs TS cannot carry (HEVC, text) are skipped; none left is a clear error")
    func choice() throws {
        let sets = """
          <Period>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <Representation id="hevc" bandwidth="900000" codecs="hvc1.1.6.L93.B0"><SegmentTemplate timescale="1" duration="2" media="h/$Number$.m4s"/></Representation>
            </AdaptationSet>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <Role schemeIdUri="urn:mpeg:dash:role:2011" value="alternate"/>
              <Representation id="alt" bandwidth="700000" codecs="avc1.4d401e"><SegmentTemplate timescale="1" duration="2" media="alt/$Number$.m4s"/></Representation>
            </AdaptationSet>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <Role schemeIdUri="urn:mpeg:dash:role:2011" value="main"/>
              <Representation id="main" bandwidth="800000" codecs="avc1.4d401e"><SegmentTemplate timescale="1" duration="2" media="main/$Number$.m4s"/></Representation>
            </AdaptationSet>
          </Period>
        """
        let transcript = try HLSTranscript(mpd: Self.mpd(sets, duration: "PT4S"), url: Self.origin)
        #expect(transcript.variants.count == 1 && transcript.variants[0].segments.count == 2)
        #expect(transcript.variants[0].segments[0].video?.media.url.absoluteString == "https://cdn.example/show/main/1.m4s")
        #expect(transcript.variants[0].segments[0].audio.isEmpty)
        let hevcOnly = Self.mpd("""
          <Period><AdaptationSet contentType="video"><Representation id="h" bandwidth="1" codecs="hev1.1.6.L93.B0">
            <SegmentTemplate timescale="1" duration="2" media="$Number$.m4s"/></Representation></AdaptationSet></Period>
        """)
        #expect(throws: StreamError.self) { try HLSTranscript(mpd: hevcOnly, url: Self.origin) }
        #expect(throws: StreamError.self) { try HLSTranscript(mpd: "<MPD><Period/></MPD>", url: Self.origin) }
        #expect(throws: StreamError.self) { try HLSTranscript(mpd: "#EXTM3U", url: Self.origin) }
    }

    @Test("a dynamic MPD: no ENDLIST anywhere, MEDIA-SEQUENCE follows $Number$; reloaded after segments were dropped and added, the sequence moves on and the names stay")
    func dynamic() throws {
        func live(startNumber: Int, times: [Int]) -> String {
            let s = times.map { "<S t=\"\($0)\" d=\"2000\"/>" }.joined()
            return Self.mpd("""
              <Period start="PT0S"><AdaptationSet contentType="video">
                <SegmentTemplate timescale="1000" startNumber="\(startNumber)" initialization="i.mp4" media="$Number$.m4s"><SegmentTimeline>\(s)</SegmentTimeline></SegmentTemplate>
                <Representation id="v" bandwidth="100000" codecs="avc1.4d401e"/></AdaptationSet></Period>
            """, dynamic: true)
        }
        let before = try HLSTranscript(mpd: live(startNumber: 10, times: [0, 2000, 4000]), url: Self.origin)
        let after = try HLSTranscript(mpd: live(startNumber: 11, times: [2000, 4000, 6000, 8000]), url: Self.origin)
        #expect(before.isDynamic && !before.masterPlaylist().contains("ENDLIST"))
        let first = try #require(before.mediaPlaylist(0)), second = try #require(after.mediaPlaylist(0))
        #expect(first.contains("#EXT-X-MEDIA-SEQUENCE:10\n") && !first.contains("ENDLIST") && !first.contains("PLAYLIST-TYPE"))
        #expect(second.contains("#EXT-X-MEDIA-SEQUENCE:11\n") && !second.contains("ENDLIST"))
        #expect(before.variants[0].segments[1].name == after.variants[0].segments[0].name, "a segment keeps its name across reloads")
        #expect(after.variants[0].segments.last?.video?.media.url.lastPathComponent == "14.m4s")
    }

    @Test("pieces: SegmentList byte ranges and Initialization@range of the BaseURL's file; audio segments that do not line up go with the video segment they start in; asset paths; bad ranges are refused")
    func pieces() throws {
        let list = Self.mpd("""
          <Period><AdaptationSet contentType="video">
            <Representation id="0" bandwidth="1" codecs="avc1.4d401e"><BaseURL>v.mp4</BaseURL>
              <SegmentList timescale="1000" duration="2000"><Initialization range="0-99"/>
                <SegmentURL mediaRange="100-199"/><SegmentURL mediaRange="200-299"/></SegmentList></Representation></AdaptationSet>
            <AdaptationSet contentType="audio">
            <Representation id="1" bandwidth="1" codecs="mp4a.40.2"><BaseURL>a.mp4</BaseURL>
              <SegmentTemplate timescale="1000" initialization="a-init.mp4" media="a-$Number$.m4s">
                <SegmentTimeline><S t="0" d="2000"/><S d="1900"/><S d="100"/></SegmentTimeline></SegmentTemplate></Representation></AdaptationSet>
          </Period>
        """, duration: "PT4S")
        let transcript = try HLSTranscript(mpd: list, url: HLSTranscript.assetURL("dash/out.mpd"))
        let segments = transcript.variants[0].segments
        #expect(segments.count == 2)
        #expect(segments[0].video?.initialization == .init(url: HLSTranscript.assetURL("dash/v.mp4"), range: 0...99))
        #expect(segments[1].video?.media == .init(url: HLSTranscript.assetURL("dash/v.mp4"), range: 200...299))
        #expect(segments[0].audio.map(\.media.url.lastPathComponent) == ["a-1.m4s"])
        #expect(segments[1].audio.map(\.media.url.lastPathComponent) == ["a-2.m4s", "a-3.m4s"])
        #expect(HLSTranscript.assetURL("dash/v.mp4").absoluteString == "satchel-asset:///dash/v.mp4")
        let bad = list.replacingOccurrences(of: "200-299", with: "299-200")
        #expect(throws: StreamError.self) { try HLSTranscript(mpd: bad, url: Self.origin) }
        #expect(HLSTranscript.wholeSeconds(0.2) == 1 && HLSTranscript.wholeSeconds(2.0) == 2 && HLSTranscript.wholeSeconds(.infinity) == 1)
    }
}
