import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelPackager
import SatchelProtection

/// Seed inputs made from real packages (the packager's HLS/TS and CMAF cenc output of a real clip), cut to
/// at most ``maxSeedBytes`` each so a batch stays quick, plus small hand-written Smooth, TLLV and JSON seeds.
public struct FuzzCorpus: Sendable {
    /// The largest seed kept.
    public static let maxSeedBytes = 96 << 10

    /// A version-0 `sidx` with three references (the seed of the segment-index target).
    public static let segmentIndex: [UInt8] = {
        var w = ByteWriter()
        w.writeUInt32(12 + 20 + 3 * 12)
        w.writeBytes(Array("sidx".utf8))
        w.writeUInt32(0)  // version 0, flags
        w.writeUInt32(1)  // reference_ID
        w.writeUInt32(1_000)  // timescale
        w.writeUInt32(0)  // earliest presentation time
        w.writeUInt32(0)  // first offset
        w.writeUInt16(0)
        w.writeUInt16(3)
        for size: UInt32 in [5_000, 6_000, 7_000] {
            w.writeUInt32(size)
            w.writeUInt32(2_000)
            w.writeUInt32(0x9000_0000)
        }
        return w.bytes
    }()

    public var masterPlaylists: [[UInt8]] = []
    public var mediaPlaylists: [[UInt8]] = []
    public var mpds: [[UInt8]] = []
    public var smooth: [UInt8] = []
    public var mp4Files: [[UInt8]] = []
    public var cencSegments: [[UInt8]] = []
    public var tsSegments: [[UInt8]] = []
    public var tllvPayloads: [[UInt8]] = []
    public var jsonBodies: [[UInt8]] = []
    public var cencDecryptor: FMP4Decryptor?
    public var cencKey = SecretBytes([UInt8](repeating: 0x11, count: 16))

    /// Packages `input` (a short H.264/AAC MP4) as HLS TS and CMAF cenc under `workDirectory` and reads seeds from both.
    public static func make(input: String, workDirectory: String) throws -> FuzzCorpus {
        var corpus = FuzzCorpus()
        let key = try ContentKey(keyID: KeyID(hex: "0123456789abcdef0123456789abcdef"), key: corpus.cencKey,
                                 iv: [UInt8](repeating: 0x22, count: 16))
        let ts = workDirectory + "/ts", cmaf = workDirectory + "/cmaf"
        _ = try Packager(options: PackageOptions(inputs: [input], output: ts, format: .hlsTS, scheme: .clear, segmentDuration: 2)).run()
        _ = try Packager(options: PackageOptions(inputs: [input], output: cmaf, format: .cmaf, scheme: .cenc, key: key, segmentDuration: 2)).run()
        let clear = workDirectory + "/clear"
        _ = try Packager(options: PackageOptions(inputs: [input], output: clear, format: .cmaf, scheme: .clear, segmentDuration: 2)).run()
        // Text is cut to the size limit (still a valid prefix for the line and markup parsers to chew on);
        // a binary file larger than the limit is left out, as a cut one would not parse.
        func read(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).map { Array($0.prefix(maxSeedBytes)) } }
        func whole(_ path: String) -> [UInt8]? { FileManager.default.contents(atPath: path).flatMap { $0.count <= maxSeedBytes ? Array($0) : nil } }
        corpus.masterPlaylists = [ts + "/master.m3u8", cmaf + "/master.m3u8"].compactMap(read)
        corpus.mediaPlaylists = [ts + "/video_0/index.m3u8", ts + "/audio_0/index.m3u8", cmaf + "/video_0/index.m3u8"].compactMap(read)
        corpus.mpds = [cmaf + "/manifest.mpd"].compactMap(read)
        corpus.tsSegments = [ts + "/video_0/segment_0.ts", ts + "/audio_0/segment_0.ts"].compactMap(whole)
        corpus.cencSegments = [cmaf + "/audio_0/segment_1.m4s", cmaf + "/audio_0/segment_2.m4s"].compactMap(whole)
        // Fragmented MP4 files: a clear init segment followed by a media segment.
        if let initSegment = whole(clear + "/audio_0/init.mp4") {
            corpus.mp4Files = [clear + "/audio_0/segment_1.m4s", clear + "/audio_0/segment_2.m4s"].compactMap(whole).map { initSegment + $0 }
        }
        corpus.cencDecryptor = whole(cmaf + "/audio_0/init.mp4").flatMap { try? FMP4Decryptor(initSegment: $0) }
        corpus.smooth = Array("""
        <?xml version="1.0"?><SmoothStreamingMedia MajorVersion="2" MinorVersion="0" Duration="40000000" TimeScale="10000000">
        <StreamIndex Type="video" Name="video" Chunks="2" QualityLevels="1" Url="QualityLevels({bitrate})/Fragments(video={start time})">
        <QualityLevel Index="0" Bitrate="500000" FourCC="H264" MaxWidth="640" MaxHeight="360" CodecPrivateData="000000016742C01E"/>
        <c t="0" d="20000000" r="2"/></StreamIndex>
        <StreamIndex Type="audio" Name="audio" Chunks="2" QualityLevels="1" Url="QualityLevels({bitrate})/Fragments(audio={start time})">
        <QualityLevel Index="0" Bitrate="64000" FourCC="AACL" SamplingRate="48000" Channels="2" CodecPrivateData="1190"/>
        <c d="20000000"/><c d="20000000"/></StreamIndex></SmoothStreamingMedia>
        """.utf8)
        corpus.tllvPayloads = [TLLVCodec.encode([TLLV(tag: TLLVTag(rawValue: 0x1bf7_f53b_3a8f_6fc1), value: [UInt8](repeating: 7, count: 16)),
                                                 TLLV(tag: TLLVTag(rawValue: 0x0000_0001_0000_0002), value: Array("payload".utf8))])]
        corpus.jsonBodies = [Array(#"{"spc":"AAAA","assetId":"movie","kids":["0123"],"nested":{"a":[1,2.5,true,null,"x"]}}"#.utf8),
                             // A backplane command as a device receives it.
                             Array(#"{"id":"c1","sequence":2,"issued":"2027-01-15T08:00:01Z","kind":"settings","settings":{"expiryAfterPlay":60,"headroom":1024}}"#.utf8)]
        return corpus
    }
}
