import Foundation
@testable import SatchelStreams
import SatchelProtection
import SatchelTestSupport
import Testing

/// Smooth Streaming to HLS, on manifests written here (the H.264 and AAC setup is ffmpeg's for a 320x240 clip).
@Suite struct SmoothTranscriptTests {
    static let origin = URL(string: "https://cdn.example/show.ism/Manifest")!
    static let h264 = "000000016764000dacd94141fb011000000300100000030320f14299600000000168ebecb22c"

    /// A manifest: two H.264 levels and a VC-1 level (not carried), English and French AAC (the French without
    /// CodecPrivateData), a text stream; video 2 s, 2 s, 1.5 s; audio fragments not aligned with the video's.
    static func manifest(live: Bool = false, firstTime: UInt64 = 0, protection: String? = nil) -> String {
        """
        <?xml version="1.0" encoding="utf-8"?>
        <SmoothStreamingMedia MajorVersion="2" MinorVersion="2" Duration="55000000"\(live ? " IsLive=\"TRUE\"" : "")>
        \(protection.map { "<Protection><ProtectionHeader SystemID=\"9a04f079-9840-4286-ab92-e65be0885f95\">\($0)</ProtectionHeader></Protection>" } ?? "")
        <StreamIndex Type="video" Url="QualityLevels({bitrate})/Fragments(video={start time})">
          <QualityLevel Index="0" Bitrate="300000" FourCC="H264" MaxWidth="320" MaxHeight="240" CodecPrivateData="\(h264)"/>
          <QualityLevel Index="1" Bitrate="900000" FourCC="AVC1" MaxWidth="640" MaxHeight="480" CodecPrivateData="\(h264)"/>
          <QualityLevel Index="2" Bitrate="1500000" FourCC="WVC1" MaxWidth="1280" MaxHeight="720" CodecPrivateData="00"/>
          <c t="\(firstTime)" d="20000000" r="2"/><c d="15000000"/>
        </StreamIndex>
        <StreamIndex Type="audio" Language="en" Url="QualityLevels({bitrate})/Fragments(audio_en={start time})">
          <QualityLevel Index="0" Bitrate="64000" FourCC="AACL" SamplingRate="48000" Channels="1" CodecPrivateData="118856e500"/>
          <c t="\(firstTime)" d="20053333"/><c d="19946667"/><c d="15000000"/>
        </StreamIndex>
        <StreamIndex Type="audio" Language="fr" Url="QualityLevels({bitrate})/Fragments(audio_fr={start time})">
          <QualityLevel Index="0" Bitrate="96000" FourCC="AACL" SamplingRate="44100" Channels="2"/>
          <c t="\(firstTime)" d="55000000"/>
        </StreamIndex>
        <StreamIndex Type="text" Language="en" Url="QualityLevels({bitrate})/Fragments(text={start time})">
          <QualityLevel Index="0" Bitrate="1000" FourCC="TTML"/>
          <c t="0" d="55000000"/>
        </StreamIndex>
        </SmoothStreamingMedia>
        """
    }

    @Test("quality levels become variants (H.264 only, with the audio stream's best level): the exact playlists, fragments named by time, audio paired with the video fragment it starts in")
    func onDemand() throws {
        let transcript = try HLSTranscript(manifest: Self.manifest(), url: Self.origin)
        #expect(!transcript.isDynamic && !transcript.isProtected)
        #expect(transcript.masterPlaylist() == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-STREAM-INF:PROGRAM-ID=1,BANDWIDTH=364000,CODECS="avc1.64000d,mp4a.40.2",RESOLUTION=320x240
            v0.m3u8
            #EXT-X-STREAM-INF:PROGRAM-ID=1,BANDWIDTH=964000,CODECS="avc1.64000d,mp4a.40.2",RESOLUTION=640x480
            v1.m3u8
            #EXT-X-ENDLIST

            """)
        #expect(transcript.mediaPlaylist(1) == """
            #EXTM3U
            #EXT-X-VERSION:3
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXTINF:2,
            v1/p0-0.ts
            #EXTINF:2,
            v1/p0-20000000.ts
            #EXTINF:2,
            v1/p0-40000000.ts
            #EXT-X-ENDLIST

            """)
        guard case let .segment(segment)? = transcript.resource(".hls/v1/p0-20000000.ts") else {
            Issue.record("no such segment")
            return
        }
        #expect(segment.video?.media.url.absoluteString == "https://cdn.example/show.ism/QualityLevels(900000)/Fragments(video=20000000)")
        #expect(segment.video?.initialization == nil && segment.video?.smooth?.time == 20_000_000 && segment.video?.smooth?.kind == "video")
        #expect(segment.video?.smooth?.quality.maxWidth == 640 && segment.video?.smooth?.timescale == 10_000_000)
        // The second audio fragment starts at 2.005 s: inside the second video fragment.
        #expect(segment.audio.map(\.media.url.lastPathComponent) == ["Fragments(audio_en=20053333)"])
        #expect(transcript.resource(".hls/v2.m3u8") == nil, "the VC-1 level is no variant")
    }

    @Test("audio by language: a French stream without CodecPrivateData gets AAC-LC from its rate and channels; live manifests have no ENDLIST and a sequence that moves with the window; protection and the PlayReady key ID")
    func languageLiveProtection() throws {
        let french = try HLSTranscript(manifest: Self.manifest(), url: Self.origin, languages: ["fr"])
        #expect(french.masterPlaylist().contains("BANDWIDTH=396000,CODECS=\"avc1.64000d,mp4a.40.2\""))
        guard case let .segment(first)? = french.resource(".hls/v0/p0-0.ts") else {
            Issue.record("no first segment")
            return
        }
        #expect(first.audio.map(\.media.url.lastPathComponent) == ["Fragments(audio_fr=0)"])
        let track = try #require(first.audio.first?.smooth).quality
        #expect(try track.track(kind: "audio", timescale: 10_000_000).sampleRate == 44_100)

        let live = try HLSTranscript(manifest: Self.manifest(live: true, firstTime: 60_000_000), url: Self.origin)
        #expect(live.isDynamic && !live.masterPlaylist().contains("ENDLIST"))
        let playlist = try #require(live.mediaPlaylist(0))
        #expect(playlist.contains("#EXT-X-MEDIA-SEQUENCE:3\n") && !playlist.contains("ENDLIST") && playlist.contains("v0/p0-60000000.ts"))

        let keyID = try KeyID(hex: "0123456789abcdef0123456789abcdef")
        let protected = try HLSTranscript(manifest: Self.manifest(protection: PIFFFixtures.playReadyHeader(keyID.bytes, version: "4.0.0.0")), url: Self.origin)
        #expect(protected.isProtected && HLSTranscript.declaresProtection(Self.manifest(protection: "AAAA")))
        guard case let .segment(segment)? = protected.resource(".hls/v0/p0-0.ts") else {
            Issue.record("no segment")
            return
        }
        #expect(segment.video?.smooth?.keyID == keyID && segment.video?.smooth?.isProtected == true)
    }

    @Test("a manifest with nothing MPEG-2 TS carries, or that does not parse, is refused with a clear error")
    func refusals() {
        let vc1 = """
            <SmoothStreamingMedia MajorVersion="2" MinorVersion="2" Duration="1">
            <StreamIndex Type="video" Url="q({bitrate})/f({start time})"><QualityLevel Bitrate="1" FourCC="WVC1"/><c t="0" d="1"/></StreamIndex>
            <StreamIndex Type="audio" Url="q({bitrate})/a({start time})"><QualityLevel Bitrate="1" FourCC="WMAP"/><c t="0" d="1"/></StreamIndex>
            </SmoothStreamingMedia>
            """
        #expect(throws: StreamError.invalidContent("the Smooth manifest has no H.264 video or AAC audio to carry in HLS")) {
            try HLSTranscript(manifest: vc1, url: Self.origin)
        }
        #expect(throws: StreamError.self) { try HLSTranscript(manifest: "<SmoothStreamingMedia><StreamIndex Type=\"video\"/>", url: Self.origin) }
    }
}

/// The key IDs of PlayReady Header Objects written here.
@Suite struct PlayReadyHeaderTests {
    @Test("KID elements (4.0) and KID VALUE attributes (4.1+) give the key ID, GUID byte order undone; damaged headers give none")
    func keyIDs() throws {
        let keyID = try KeyID(hex: "0123456789abcdef0123456789abcdef")
        #expect(PlayReadyHeader.keyIDs(base64: PIFFFixtures.playReadyHeader(keyID.bytes, version: "4.0.0.0")) == [keyID])
        #expect(PlayReadyHeader.keyIDs(base64: PIFFFixtures.playReadyHeader(keyID.bytes, version: "4.3.0.0")) == [keyID])
        #expect(PlayReadyHeader.keyIDs(base64: "not base64").isEmpty)
        let cut = Array(Data(base64Encoded: PIFFFixtures.playReadyHeader(keyID.bytes, version: "4.0.0.0")) ?? Data()).prefix(40)
        #expect(PlayReadyHeader.keyIDs(object: Array(cut)).isEmpty)
    }
}
