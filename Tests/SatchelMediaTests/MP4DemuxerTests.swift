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
    func demux(name: String, extra: [String], container: String) async throws {
        try await TestMedia.offloaded {
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
    }

    @Test("from its layout (moov and moof boxes alone), a file demuxes to the same samples, each placed by its file range; a sample past the file's end and a box read short are typed errors",
          arguments: [("progressive", [String]()), ("fragmented", ["-movflags", "+frag_keyframe+empty_moov+default_base_moof"])])
    func layout(name: String, extra: [String]) async throws {
        try await TestMedia.offloaded {
            let bytes = try TestMedia.bytes(try TestMedia.make("demux-\(name)", extra: extra))
            let top = try MP4Box.children(of: bytes, in: 0..<bytes.count)
            let boxes = top.filter { $0.type == "moov" || $0.type == "moof" }
                .map { MP4Layout.Box(type: $0.type.description, offset: $0.offset, bytes: Array(bytes[$0.offset..<($0.offset + $0.size)])) }
            let whole = try MP4Demuxer.demux(bytes)
            let placed = try MP4Demuxer.demux(layout: MP4Layout(fileSize: bytes.count, boxes: boxes))
            #expect(placed.map(\.id) == whole.map(\.id) && placed.map(\.samples.count) == whole.map(\.samples.count))
            for (track, reference) in zip(placed, whole) {
                for (sample, expected) in zip(track.samples, reference.samples) {
                    let range = try #require(sample.fileRange)
                    #expect(sample.data.isEmpty && sample.byteCount == expected.data.count)
                    #expect(bytes[range] == expected.data && sample.dts == expected.dts && sample.isSync == expected.isSync)
                }
            }
            // The file said to end before its last sample: that sample lies past the end.
            let lastEnd = placed.compactMap { $0.samples.last?.fileRange?.upperBound }.max() ?? 0
            #expect(throws: MediaError.self) { try MP4Demuxer.demux(layout: MP4Layout(fileSize: lastEnd - 1, boxes: boxes)) }
            // A box whose bytes stop short of its declared size.
            var short = boxes
            short[0].bytes.removeLast()
            #expect(throws: MediaError.self) { try MP4Demuxer.demux(layout: MP4Layout(fileSize: bytes.count, boxes: short)) }
            #expect(throws: MediaError.self) { try MP4Demuxer.demux(layout: MP4Layout(fileSize: bytes.count, boxes: [])) }
        }
    }

    @Test("a 64-bit chunk offset at the top of the range is a typed error (the next sample's offset would overflow)")
    func chunkOffsetOverflow() throws {
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let size = UInt32(8 + payload.count)
            return (0..<4).map { UInt8(truncatingIfNeeded: size >> (24 - 8 * UInt32($0))) } + Array(type.utf8) + payload
        }
        func word(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32($0))) } }
        let bytes = box("stts", word(0) + word(1) + word(2) + word(1))
            + box("stsz", word(0) + word(0) + word(2) + word(10) + word(10))
            + box("stsc", word(0) + word(1) + word(1) + word(2) + word(1))
            + box("co64", word(0) + word(1) + [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfa])
        let stbl = try MP4Box.children(of: bytes, in: 0..<bytes.count)
        let table = try SampleTable(stbl, bytes, fileSize: 1_000)
        #expect(throws: MediaError.self) { try table.samples(in: bytes, isAudio: true, source: .inline(bytes)) }
    }

    @Test("truncated and random inputs give typed errors, never a crash")
    func hostileInput() async throws {
        try await TestMedia.offloaded {
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
}
