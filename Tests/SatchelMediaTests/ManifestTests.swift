import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelMedia

@Suite("Manifests")
struct ManifestTests {
    static let master = """
    #EXTM3U
    #EXT-X-VERSION:6
    #EXT-X-INDEPENDENT-SEGMENTS
    #EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI="skd://a",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
    #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aud",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,CHANNELS="2",URI="a/en.m3u8"
    #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",NAME="Deutsch",LANGUAGE="de",DEFAULT=NO,AUTOSELECT=YES,URI="s/de.m3u8"
    #EXT-X-STREAM-INF:BANDWIDTH=800000,AVERAGE-BANDWIDTH=600000,CODECS="avc1.64001f,mp4a.40.2",RESOLUTION=640x360,FRAME-RATE=29.97,AUDIO="aud",SUBTITLES="subs"
    v/360.m3u8
    #EXT-X-STREAM-INF:BANDWIDTH=2400000,CODECS="avc1.640028,mp4a.40.2",RESOLUTION=1280x720,AUDIO="aud"
    v/720.m3u8
    """

    static let media = """
    #EXTM3U
    #EXT-X-VERSION:7
    #EXT-X-TARGETDURATION:6
    #EXT-X-MEDIA-SEQUENCE:0
    #EXT-X-PLAYLIST-TYPE:VOD
    #EXT-X-KEY:METHOD=AES-128,URI="https://k/1",IV=0x00000000000000000000000000000001
    #EXT-X-MAP:URI="init.mp4",BYTERANGE="720@0"
    #EXTINF:6.006,
    #EXT-X-BYTERANGE:1000@720
    media.mp4
    #EXT-X-DISCONTINUITY
    #EXTINF:5.5,title
    #EXT-X-BYTERANGE:2000
    media.mp4
    #EXT-X-ENDLIST
    """

    @Test("HLS master playlists parse, and write back to an equivalent playlist")
    func masterRoundTrip() throws {
        let master = try HLSMasterPlaylist(parsing: Self.master)
        #expect(master.variants.count == 2 && master.renditions.count == 2 && master.sessionKeys.count == 1)
        #expect(master.variants[0].resolution?.width == 640 && master.variants[0].frameRate == 29.97 && master.variants[0].subtitlesGroup == "subs")
        #expect(master.renditions[0].isDefault && master.renditions[0].language == "en" && !master.renditions[1].isDefault)
        #expect(try HLSMasterPlaylist(parsing: master.text) == master)
        #expect(HLSMasterPlaylist.isMaster(Self.master) && !HLSMasterPlaylist.isMaster(Self.media))
    }

    @Test("HLS media playlists parse keys, maps, byte ranges and discontinuities, and write back")
    func mediaRoundTrip() throws {
        let playlist = try HLSMediaPlaylist(parsing: Self.media)
        #expect(playlist.segments.count == 2 && playlist.endList && playlist.targetDuration == 6)
        #expect(playlist.segments[0].keys.first?.method == "AES-128" && playlist.segments[0].map?.byteRange == HLSByteRange(length: 720, offset: 0))
        #expect(playlist.segments[0].byteRange == HLSByteRange(length: 1000, offset: 720) && playlist.segments[0].duration == 6.006)
        #expect(playlist.segments[1].discontinuity && playlist.segments[1].byteRange == HLSByteRange(length: 2000, offset: nil))
        #expect(try HLSMediaPlaylist(parsing: playlist.text) == playlist)
        #expect(throws: MediaError.self) { try HLSMediaPlaylist(parsing: "not a playlist") }
        #expect(throws: MediaError.self) { try HLSMediaPlaylist(parsing: "#EXTM3U\nseg.ts\n") }
    }

    @Test("DASH MPDs parse templates with $Number$ and $Time$ timelines, lists and bases; writing round-trips")
    func dash() throws {
        let text = """
        <?xml version="1.0"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:cenc="urn:mpeg:cenc:2013" type="static" mediaPresentationDuration="PT1M0.5S">
          <BaseURL>https://cdn/x/</BaseURL>
          <Period>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <ContentProtection schemeIdUri="urn:mpeg:dash:mp4protection:2011" value="cenc" cenc:default_KID="01234567-89ab-cdef-0123-456789abcdef"/>
              <SegmentTemplate timescale="90000" media="$RepresentationID$/$Time$.m4s" initialization="$RepresentationID$/init.mp4">
                <SegmentTimeline><S t="0" d="180000" r="2"/><S d="90000"/></SegmentTimeline>
              </SegmentTemplate>
              <Representation id="v1" bandwidth="500000" codecs="avc1.4d401e" width="640" height="360"/>
            </AdaptationSet>
            <AdaptationSet mimeType="audio/mp4" lang="en">
              <Representation id="a1" bandwidth="64000"><BaseURL>a1.mp4</BaseURL><SegmentBase indexRange="800-1200"><Initialization range="0-799"/></SegmentBase></Representation>
              <Representation id="a2" bandwidth="96000"><SegmentList><Initialization sourceURL="a2/i.mp4"/><SegmentURL media="a2/1.m4s"/><SegmentURL media="a2/2.m4s" mediaRange="0-99"/></SegmentList></Representation>
              <Representation id="a3" bandwidth="96000"><SegmentTemplate timescale="1000" duration="4000" startNumber="5" media="a3/$Number%05d$.m4s"/></Representation>
            </AdaptationSet>
          </Period>
        </MPD>
        """
        let mpd = try DASHManifest(parsing: text)
        #expect(mpd.duration == 60.5 && mpd.baseURL == "https://cdn/x/" && mpd.adaptationSets.count == 2)
        let video = mpd.adaptationSets[0]
        #expect(video.kind == "video" && video.contentProtection.first?.defaultKID == "01234567-89ab-cdef-0123-456789abcdef")
        let segments = try #require(video.representations.first?.segmentTemplate).segments(presentationDuration: mpd.duration)
        #expect(segments.map(\.time) == [0, 180000, 360000, 540000] && segments.last?.duration == 90000)
        #expect(try DASHSegmentTemplate.expand("$RepresentationID$/$Time$.m4s", representationID: "v1", bandwidth: 1, number: 3, time: 540000) == "v1/540000.m4s")
        let audio = mpd.adaptationSets[1]
        #expect(audio.kind == "audio" && audio.language == "en")
        #expect(audio.representations[0].segmentBase?.indexRange == "800-1200" && audio.representations[0].baseURL == "a1.mp4")
        #expect(audio.representations[1].segmentList?.segments.count == 2 && audio.representations[1].segmentList?.initialization == "a2/i.mp4")
        let numbered = try #require(audio.representations[2].segmentTemplate)
        let numberedSegments = try numbered.segments(presentationDuration: 60.5)
        #expect(numberedSegments.count == 16 && numberedSegments.first?.number == 5)
        #expect(try DASHSegmentTemplate.expand(numbered.media ?? "", representationID: "a3", bandwidth: 1, number: 7, time: nil) == "a3/00007.m4s")
        let written = DASHManifest(duration: 12, adaptationSets: [video])
        #expect(try DASHManifest(parsing: written.text).adaptationSets.first?.representations.first?.segmentTemplate == video.representations.first?.segmentTemplate)
        #expect(DASHManifest.parseDuration("PT1H2M3.5S") == 3723.5 && DASHManifest.parseDuration("bogus") == nil)
    }

    @Test("Smooth Streaming manifests parse streams, quality levels and fragment times")
    func smooth() throws {
        let text = """
        <SmoothStreamingMedia MajorVersion="2" MinorVersion="0" Duration="60000000" TimeScale="10000000">
          <StreamIndex Type="video" Chunks="3" QualityLevels="2" Url="QualityLevels({bitrate})/Fragments(video={start time})">
            <QualityLevel Index="0" Bitrate="1000000" FourCC="H264" MaxWidth="1280" MaxHeight="720" CodecPrivateData="000000016742"/>
            <QualityLevel Index="1" Bitrate="500000" FourCC="H264" MaxWidth="640" MaxHeight="360"/>
            <c t="0" d="20000000"/><c d="20000000" r="2"/>
          </StreamIndex>
          <StreamIndex Type="audio" Language="en" Url="QualityLevels({bitrate})/Fragments(audio={start time})">
            <QualityLevel Index="0" Bitrate="128000" FourCC="AACL" SamplingRate="48000" Channels="2"/>
            <c d="30000000"/><c d="30000000"/>
          </StreamIndex>
          <Protection><ProtectionHeader SystemID="9a04f079-9840-4286-ab92-e65be0885f95">AAAA</ProtectionHeader></Protection>
        </SmoothStreamingMedia>
        """
        let manifest = try SmoothManifest(parsing: text)
        #expect(manifest.duration == 60_000_000 && !manifest.isLive && manifest.protectionHeader == "AAAA")
        let video = manifest.streams[0]
        #expect(video.qualityLevels.map(\.bitrate) == [1_000_000, 500_000] && video.fragmentTimes == [0, 20_000_000, 40_000_000])
        #expect(video.fragmentURL(bitrate: 500_000, startTime: 20_000_000) == "QualityLevels(500000)/Fragments(video=20000000)")
        #expect(manifest.streams[1].fragmentTimes == [0, 30_000_000] && manifest.streams[1].language == "en")
        #expect(throws: MediaError.self) { try SmoothManifest(parsing: "<MPD/>") }
    }

    @Test("parsers never crash on truncated or random input")
    func fuzz() async throws {
        // A second of parsing: on a thread of its own, not one of the task pool's two.
        try await TestMedia.offloaded {
            var random = SplitMix64(seed: 0x5A7C_E1)  // seeded: a failure is the same input again (and no system call per byte)
            let dashText = DASHManifest(duration: 10, adaptationSets: [DASHAdaptationSet(contentType: "video", mimeType: "video/mp4", representations: [
                DASHRepresentation(id: "v", bandwidth: 1, segmentTemplate: DASHSegmentTemplate(timescale: 1, initialization: "i", media: "$Number$", timeline: [(0, 2, 3)]))])]).text
            let samples = [Self.master, Self.media, dashText]
            for text in samples {
                let bytes = Array(text.utf8)
                for cut in 0..<bytes.count {
                    let truncated = String(decoding: bytes.prefix(cut), as: UTF8.self)
                    _ = try? HLSMasterPlaylist(parsing: truncated)
                    _ = try? HLSMediaPlaylist(parsing: truncated)
                    _ = try? DASHManifest(parsing: truncated)
                    _ = try? SmoothManifest(parsing: truncated)
                }
                for _ in 0..<300 {
                    var mutated = bytes
                    for _ in 0..<4 { mutated[Int.random(in: 0..<mutated.count, using: &random)] = UInt8.random(in: 0...255, using: &random) }
                    let text = String(decoding: mutated, as: UTF8.self)
                    _ = try? HLSMasterPlaylist(parsing: text)
                    _ = try? HLSMediaPlaylist(parsing: text)
                    _ = try? DASHManifest(parsing: text)
                }
            }
            // Binary parsers: TS demuxer, PMT reader, box reader, ADTS, SPS, avcC.
            let ts = TSMuxerTests.sampleStream()
            for cut in stride(from: 0, to: ts.count, by: 7) {
                _ = try? TSDemuxer.demux(Array(ts.prefix(cut)))
                _ = try? TSDemuxer.programStreams(Array(ts.prefix(cut)))
            }
            for _ in 0..<2000 {
                let noise = (0..<Int.random(in: 0...600, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                _ = try? TSDemuxer.demux([0x47] + noise)
                _ = try? MP4Box.children(of: noise, in: 0..<noise.count)
                _ = try? ADTSHeader(noise[...])
                _ = try? H264SPS([0x67] + noise)
                _ = try? AVCDecoderConfiguration([1] + noise)
                _ = try? AudioSpecificConfig(noise)
                _ = try? NALUnit.splitLengthPrefixed(noise[...])
                _ = NALUnit.splitAnnexB(noise[...])
                #expect(NALUnit.removeEmulationPrevention(NALUnit.addEmulationPrevention(noise)) == noise)
            }
        }
    }
}

@Suite("MPEG-TS muxer")
struct TSMuxerTests {
    static let sps: [UInt8] = [0x67, 0x42, 0xC0, 0x1E, 0xF4, 0x0A, 0x0F, 0xC8]

    static func sampleStream() -> [UInt8] {
        var muxer = TSMuxer(streams: [.h264, .aac])
        var out = muxer.tables()
        for index in 0..<20 {
            // Baseline SPS for 320x240 (hand-encoded) and a PPS before the first slice.
            let parameterSets: [UInt8] = index == 0 ? [0, 0, 0, 1] + sps + [0, 0, 0, 1, 0x68, 0xCE, 0x38, 0x80] : []
            let nal: [UInt8] = parameterSets + [0, 0, 0, 1, 0x65] + (0..<(200 + index * 37)).map { UInt8(truncatingIfNeeded: $0 * 7 + 1) }
            muxer.pes(.h264, pts: Int64(index) * 3600 + 7200, dts: Int64(index) * 3600 + 3600, payload: nal, pcr: Int64(index) * 3600, randomAccess: true, into: &out)
            let config = (try? AudioSpecificConfig(sampleRate: 48000, channelConfiguration: 2)) ?? (try! AudioSpecificConfig([0x11, 0x90]))
            let frame = Array(repeating: UInt8(index), count: 100 + index)
            muxer.pes(.aac, pts: Int64(index) * 1920 + 3600, dts: nil, payload: config.adtsHeader(payloadLength: frame.count) + frame, into: &out)
        }
        return out
    }

    @Test("AC-3 and E-AC-3 streams carry their registration descriptors (AC-3, EAC3) in the PMT, so a reader tells one from the other")
    func dolbyRegistration() {
        for (stream, format) in [(TSStream.ac3, "AC-3"), (.eac3, "EAC3")] {
            var muxer = TSMuxer(streams: [.h264, stream])
            let tables = muxer.tables()
            let entry: [UInt8] = [stream.streamType, 0xE1, 0x01, 0xF0, 0x06, 0x05, 0x04] + Array(format.utf8)
            let found = tables.indices.dropLast(entry.count - 1).contains { Array(tables[$0..<($0 + entry.count)]) == entry }
            #expect(found, "\(format): the PMT entry with its descriptor")
        }
    }

    @Test("PES round-trip through the demuxer: timestamps, payloads, continuity, 188-byte packets, valid CRCs")
    func roundTrip() throws {
        let stream = Self.sampleStream()
        #expect(stream.count % 188 == 0)
        var counters: [UInt16: UInt8] = [:]
        for offset in stride(from: 0, to: stream.count, by: 188) {
            #expect(stream[offset] == 0x47)
            let pid = UInt16(stream[offset + 1] & 0x1F) << 8 | UInt16(stream[offset + 2])
            let counter = stream[offset + 3] & 0x0F
            if let last = counters[pid] { #expect(counter == (last + 1) & 0x0F, "continuity on PID \(pid)") }
            counters[pid] = counter
        }
        let sectionLength = Int(stream[6] & 0x0F) << 8 | Int(stream[7])
        let section = Array(stream[5..<(5 + 3 + sectionLength)])
        #expect(MPEG2CRC32.checksum(section) == 0, "a PSI section including its CRC checks to zero")
        let tracks = try TSDemuxer.demux(stream)
        let video = try #require(tracks.first { $0.kind == .video })
        #expect(video.width == 320 && video.height == 240)
        #expect(try H264SPS(Self.sps) == H264SPS(Self.sps) && (try H264SPS(Self.sps)).width == 320)
        #expect(video.samples.count == 20 && video.samples[3].dts == 3 * 3600 + 3600 && video.samples[3].pts == 3 * 3600 + 7200)
        let audio = try #require(tracks.first { $0.kind == .audio })
        #expect(audio.samples.count == 20 && Array(audio.samples[5].data) == Array(repeating: 5, count: 105))
        #expect(try TSDemuxer.programStreams(stream).map(\.streamType) == [0x1B, 0x0F])
    }
}

/// The NAL scanners jump from zero byte to zero byte; they must find exactly what a byte-by-byte reading finds.
@Suite("NAL unit scanning")
struct NALScanTests {
    /// Start codes and escapes by the byte: the readings the fast scanners must equal.
    static func referenceUnits(_ bytes: [UInt8]) -> [[UInt8]] {
        var units: [[UInt8]] = [], start: Int?, index = 0
        while index + 2 < bytes.count {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1 {
                if let begin = start {
                    var stop = index
                    while stop > begin, bytes[stop - 1] == 0 { stop -= 1 }
                    if stop > begin { units.append(Array(bytes[begin..<stop])) }
                }
                index += 3
                start = index
            } else {
                index += 1
            }
        }
        if let begin = start, begin < bytes.count { units.append(Array(bytes[begin...])) }
        return units
    }

    static func referenceRBSP(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [], zeros = 0
        for byte in bytes {
            if zeros >= 2, byte == 3 { zeros = 0; continue }
            out.append(byte)
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return out
    }

    @Test("Annex B units and RBSP from bytes rich in zeros, ones and threes (seeded), in slices that do not start at 0")
    func equalsByteByByte() {
        var state: UInt64 = 0x5A7C_3E9A_14B2_D05F
        func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return state >> 33
        }
        let alphabet: [UInt8] = [0, 0, 0, 0, 1, 3, 3, 0x65, 0xFF]
        for _ in 0..<3000 {
            let count = Int(next() % 300)
            let bytes = (0..<count).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }
            let lead = Int(next() % 5)
            let padded = [UInt8](repeating: 0x47, count: lead) + bytes
            #expect(NALUnit.splitAnnexB(padded[lead...]).map { Array($0) } == Self.referenceUnits(bytes), "\(bytes)")
            #expect(NALUnit.removeEmulationPrevention(padded[lead...]) == Self.referenceRBSP(bytes), "\(bytes)")
        }
    }
}
