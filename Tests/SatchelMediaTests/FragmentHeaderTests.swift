import SatchelMedia
import Testing

@Suite("fMP4 fragment header")
struct FragmentHeaderTests {
    @Test("a fragment header followed by the samples' bytes is the media segment, for clear and protected samples")
    func headerThenBytes() {
        let samples = (0..<5).map { index in
            FragmentSample(duration: 1024, ctsOffset: Int32(index % 2) * 512, isSync: index == 0,
                           data: Array(repeating: UInt8(index), count: 100 + 37 * index)[...], iv: (0..<8).map { UInt8($0 + index) },
                           subsamples: [Subsample(clear: 5, protected: UInt32(95 + 37 * index))])
        }
        let protection = FMP4Protection(scheme: "cenc", keyID: Array(repeating: 7, count: 16), perSampleIVSize: 8)
        for protection in [nil, protection] {
            let whole = FMP4Writer.mediaSegment(sequenceNumber: 3, baseDecodeTime: 90_000, samples: samples, protection: protection)
            let described = samples.map { FragmentSample(duration: $0.duration, ctsOffset: $0.ctsOffset, isSync: $0.isSync,
                                                         byteCount: $0.data.count, iv: $0.iv, subsamples: $0.subsamples) }
            var header: [UInt8] = []
            FMP4Writer.fragmentHeader(sequenceNumber: 3, baseDecodeTime: 90_000, samples: described, protection: protection, into: &header)
            #expect(header + samples.flatMap(\.data) == whole)
            #expect(whole.count == header.count + samples.reduce(0) { $0 + $1.data.count })
        }
    }

    @Test("a sample's length follows its bytes when they are replaced, so a segment never states a stale size")
    func lengthFollowsBytes() {
        var sample = FragmentSample(duration: 1024, ctsOffset: 0, isSync: true, byteCount: 500)
        #expect(sample.byteCount == 500 && sample.data.isEmpty)
        sample.data = [1, 2, 3][...]
        #expect(sample.byteCount == 3)
        let segment = FMP4Writer.mediaSegment(sequenceNumber: 1, baseDecodeTime: 0, samples: [sample], protection: nil)
        #expect(Array(segment.suffix(11)) == [0, 0, 0, 11] + Array("mdat".utf8) + [1, 2, 3])
    }

    @Test("a fragment of 4 GiB or more gets a 64-bit mdat size, and its trun data offset counts the longer header")
    func largeMediaData() throws {
        let samples = (0..<2).map { _ in FragmentSample(duration: 1024, ctsOffset: 0, isSync: true, byteCount: 3 << 30) }
        var header: [UInt8] = []
        FMP4Writer.fragmentHeader(sequenceNumber: 1, baseDecodeTime: 0, samples: samples, protection: nil, into: &header)
        let size = UInt64(6 << 30) + 16
        #expect(Array(header.suffix(16)) == [0, 0, 0, 1] + Array("mdat".utf8) + (0..<8).map { UInt8(truncatingIfNeeded: size >> (56 - 8 * UInt64($0))) })
        let moof = try #require(try MP4Box.children(of: header, in: 0..<(header.count - 16)).first)
        let traf = try #require(try moof.children(in: header).first("traf"))
        let trun = try #require(try traf.children(in: header).first("trun"))
        var reader = trun.reader(in: header)
        _ = try reader.readUInt32()  // version and flags
        _ = try reader.readUInt32()  // sample count
        #expect(Int(try reader.readUInt32()) == header.count, "the first sample starts right after the 16-byte mdat header")
    }
}
