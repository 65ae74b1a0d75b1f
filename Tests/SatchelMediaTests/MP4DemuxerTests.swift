import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelMedia

@Suite("MP4 demuxer")
struct MP4DemuxerTests {
    @Test("progressive and fragmented MP4 and MOV: tracks, codecs and packet counts match ffprobe", arguments: [
        ("progressive", [String](), "mp4"),
        ("fragmented", ["-movflags", "+frag_keyframe+empty_moov+default_base_moof"], "mp4"),
        ("quicktime", [String](), "mov"),
    ])
    func demux(name: String, extra: [String], container: String) throws {
        let url = try TestMedia.make("demux-\(name)", extra: extra, container: container)
        let tracks = try MP4Demuxer.demux(try TestMedia.bytes(url))
        let counts = try TestMedia.packetCounts(url)
        let video = try #require(tracks.first { $0.kind == .video })
        let audio = try #require(tracks.first { $0.kind == .audio })
        #expect(video.codec == .h264 && video.width == 320 && video.height == 240)
        #expect(audio.codec == .aac && audio.sampleRate == 48000 && audio.channelCount == 2)
        #expect(video.samples.count == counts["video"])
        #expect(audio.samples.count == counts["audio"])
        #expect(video.samples.first?.isSync == true)
        #expect(video.samples.filter(\.isSync).count == 3, "a keyframe every 2 s over 6 s")
        #expect(abs(video.durationSeconds - 6) < 0.1)
        let config = try AVCDecoderConfiguration(video.codecConfiguration)
        let sps = try H264SPS(config.sps[0])
        #expect(sps.width == 320 && sps.height == 240)
        // Each video sample is a run of length-prefixed NAL units that exactly fills it.
        for sample in video.samples.prefix(10) {
            let units = try NALUnit.splitLengthPrefixed(sample.data, lengthSize: config.lengthSize)
            #expect(!units.isEmpty)
        }
        #expect(try AudioSpecificConfig(audio.codecConfiguration).objectType == 2)
    }

    @Test("truncated and random inputs give typed errors, never a crash")
    func hostileInput() throws {
        let bytes = try TestMedia.bytes(try TestMedia.make("demux-progressive"))
        var random = SystemRandomNumberGenerator()
        for length in stride(from: 0, to: bytes.count, by: max(bytes.count / 300, 1)) {
            _ = try? MP4Demuxer.demux(Array(bytes.prefix(length)))
        }
        for _ in 0..<500 {
            var mutated = bytes
            for _ in 0..<8 { mutated[Int.random(in: 0..<mutated.count, using: &random)] = UInt8.random(in: 0...255, using: &random) }
            _ = try? MP4Demuxer.demux(mutated)  // typed throws: any failure is a MediaError
            let noise = (0..<Int.random(in: 0...512, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            _ = try? MP4Demuxer.demux(noise)
        }
    }
}
