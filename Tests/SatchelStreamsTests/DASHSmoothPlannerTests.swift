import Foundation
import SatchelStreams
import SatchelMedia
import Testing

@Suite("DASH and Smooth download planning")
struct DASHSmoothPlannerTests {
    static let mpd = """
    <?xml version="1.0"?>
    <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT8S">
      <BaseURL>https://cdn.example/v1/</BaseURL>
      <Period>
        <AdaptationSet contentType="video" mimeType="video/mp4">
          <SegmentTemplate timescale="1000" initialization="$RepresentationID$/init.mp4" media="$RepresentationID$/t$Time$.m4s">
            <SegmentTimeline><S t="0" d="4000" r="1"/></SegmentTimeline>
          </SegmentTemplate>
          <Representation id="v1" bandwidth="1000000"/>
          <Representation id="v2" bandwidth="3000000"/>
        </AdaptationSet>
        <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
          <Representation id="en-lo" bandwidth="64000"><BaseURL>audio/en/</BaseURL>
            <SegmentTemplate timescale="1" duration="4" startNumber="5" initialization="init.mp4" media="seg$Number%03d$.m4s"/></Representation>
          <Representation id="en-hi" bandwidth="128000"><BaseURL>audio/en/</BaseURL>
            <SegmentTemplate timescale="1" duration="4" startNumber="5" initialization="init.mp4" media="seg$Number%03d$.m4s"/></Representation>
        </AdaptationSet>
        <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="de">
          <Representation id="de" bandwidth="64000"><SegmentTemplate timescale="1" duration="4" media="de/$Number$.m4s"/></Representation>
        </AdaptationSet>
      </Period>
    </MPD>
    """
    static let url = URL(string: "https://cdn.example/v1/manifest.mpd")!

    @Test("$Time$ timelines and $Number$ durations expand; video and audio by their limits; other languages on request")
    func dash() throws {
        let plan = try DASHDownloadPlanner.plan(mpd: Self.mpd, url: Self.url, options: .init(maxVideoBitrate: 2_000_000, maxAudioBitrate: 100_000))
        #expect(plan.resources.map(\.localPath).sorted() == ["audio/en/init.mp4", "audio/en/seg005.m4s", "audio/en/seg006.m4s",
                                                                "v1/init.mp4", "v1/t0.m4s", "v1/t4000.m4s"])
        #expect(plan.resources.prefix(2).allSatisfy { $0.kind == .initialization }, "init segments first")
        #expect(plan.totalDuration == 8 && plan.mediaDuration == 8)
        let local = try DASHManifest(parsing: try #require(plan.manifests.first?.text))
        #expect(local.baseURL == "./" && local.adaptationSets.count == 2, "the MPD's BaseURL now names the local folder")
        #expect(local.adaptationSets[1].representations.map(\.id) == ["en-lo"] && local.adaptationSets[1].representations[0].baseURL == "audio/en/")
        let german = try DASHDownloadPlanner.plan(mpd: Self.mpd, url: Self.url, options: .init(languages: ["de"]))
        #expect(german.resources.contains { $0.localPath == "de/1.m4s" } && german.resources.contains { $0.localPath == "v2/t4000.m4s" })
        // Cached duration counts contiguous segments of every track; the shortest track wins.
        let complete = Set(["v1/init.mp4", "audio/en/init.mp4", "v1/t0.m4s", "v1/t4000.m4s", "audio/en/seg005.m4s"])
        #expect(plan.cachedDuration { complete.contains(plan.resources[$0].localPath) } == 4)
        #expect(throws: StreamError.liveStream(Self.url.absoluteString)) {
            try DASHDownloadPlanner.plan(mpd: Self.mpd.replacingOccurrences(of: "type=\"static\"", with: "type=\"dynamic\""), url: Self.url, options: .init())
        }
    }

    @Test("Smooth: quality levels by limit, fragment URLs from the template, live refused")
    func smooth() throws {
        let manifest = """
        <SmoothStreamingMedia MajorVersion="2" MinorVersion="2" Duration="40000000">
          <StreamIndex Type="video" Url="QualityLevels({bitrate})/Fragments(video={start time})" Chunks="2">
            <QualityLevel Index="0" Bitrate="2000000" FourCC="H264"/><QualityLevel Index="1" Bitrate="500000" FourCC="H264"/>
            <c t="0" d="20000000"/><c d="20000000"/>
          </StreamIndex>
          <StreamIndex Type="audio" Name="en" Language="en" Url="QualityLevels({bitrate})/Fragments(en={start time})" Chunks="2">
            <QualityLevel Index="0" Bitrate="128000" FourCC="AACL"/><c t="0" d="20000000" r="2"/>
          </StreamIndex>
          <StreamIndex Type="audio" Name="fr" Language="fr" Url="QualityLevels({bitrate})/Fragments(fr={start time})" Chunks="2">
            <QualityLevel Index="0" Bitrate="128000" FourCC="AACL"/><c t="0" d="20000000" r="2"/>
          </StreamIndex>
        </SmoothStreamingMedia>
        """
        let url = URL(string: "https://cdn.example/film.ism/Manifest")!
        let plan = try SmoothDownloadPlanner.plan(manifest: manifest, url: url, options: .init(maxVideoBitrate: 1_000_000))
        #expect(plan.resources.map(\.url) == ["https://cdn.example/film.ism/QualityLevels(500000)/Fragments(video=0)",
                                              "https://cdn.example/film.ism/QualityLevels(128000)/Fragments(en=0)",
                                              "https://cdn.example/film.ism/QualityLevels(500000)/Fragments(video=20000000)",
                                              "https://cdn.example/film.ism/QualityLevels(128000)/Fragments(en=20000000)"])
        #expect(plan.mainPath == "Manifest" && plan.totalDuration == 4)
        let local = try SmoothManifest(parsing: try #require(plan.manifests.first?.text))
        #expect(local.streams.map(\.name) == ["video", "en"].map { $0 == "video" ? nil : $0 } && local.streams[0].qualityLevels.map(\.bitrate) == [500_000])
        #expect(try SmoothDownloadPlanner.plan(manifest: manifest, url: url, options: .init(languages: ["fr"])).resources.count == 6)
        #expect(throws: StreamError.liveStream(url.absoluteString)) {
            try SmoothDownloadPlanner.plan(manifest: manifest.replacingOccurrences(of: "Duration=\"40000000\"", with: "IsLive=\"TRUE\""), url: url, options: .init())
        }
    }
}

@Suite("DASH download planning: representations without IDs")
struct DASHUnnamedRepresentationTests {
    @Test("the chosen representation is kept by its position when representations carry no id; the others go")
    func byPosition() throws {
        let mpd = """
        <?xml version="1.0"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S">
          <Period>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <Representation bandwidth="500000"><BaseURL>lo.mp4</BaseURL></Representation>
              <Representation bandwidth="2000000"><BaseURL>hi.mp4</BaseURL></Representation>
            </AdaptationSet>
          </Period>
        </MPD>
        """
        let plan = try DASHDownloadPlanner.plan(mpd: mpd, url: URL(string: "https://cdn.example/m/manifest.mpd")!, options: .init())
        let local = try #require(plan.manifests.first?.text)
        #expect(plan.resources.map(\.localPath) == ["hi.mp4"])
        #expect(local.contains("<BaseURL>hi.mp4</BaseURL>") && !local.contains("lo.mp4"), "\(local)")
    }
}

@Suite("DASH download planning: one file per track (ffmpeg's single-file output)")
struct DASHSingleFileTests {
    @Test("Initialization@range without a sourceURL becomes a file of its own (sourceURL set, range gone), like the media ranges (mediaRange and indexRange gone)")
    func initializationRange() throws {
        let mpd = """
        <?xml version="1.0"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT4S">
          <Period>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <Representation id="0" bandwidth="500000"><BaseURL>v.mp4</BaseURL>
                <SegmentList timescale="1000" duration="2000"><Initialization range="0-99"/>
                  <SegmentURL mediaRange="100-199" indexRange="100-151"/><SegmentURL mediaRange="200-299" indexRange="200-251"/></SegmentList>
              </Representation>
            </AdaptationSet>
          </Period>
        </MPD>
        """
        let plan = try DASHDownloadPlanner.plan(mpd: mpd, url: URL(string: "https://cdn.example/m/manifest.mpd")!, options: .init())
        #expect(plan.resources.map(\.localPath) == ["v.0-100.mp4", "v.100-100.mp4", "v.200-100.mp4"])
        #expect(plan.resources.first?.kind == .initialization && plan.resources.first?.range?.offset == 0)
        let local = try #require(plan.manifests.first?.text)
        #expect(local.contains(#"<Initialization sourceURL="v.0-100.mp4"/>"#) && !local.contains("Range"), "\(local)")
        #expect(local.contains(#"<SegmentURL media="v.100-100.mp4"/><SegmentURL media="v.200-100.mp4"/>"#), "media added where the MPD had none: \(local)")
    }
}
