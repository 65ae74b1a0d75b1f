import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelMedia

@Suite("H.264 slice headers")
struct SliceHeaderTests {
    @Test("x264 slices (CABAC and CAVLC, with B-frames) parse to a header length inside every slice",
          arguments: [("cabac", ["-bf", "3"]), ("cavlc", ["-coder", "0", "-bf", "0"]), ("weighted", ["-bf", "2", "-weightp", "2"])])
    func x264(name: String, options: [String]) async throws {
        try await TestMedia.offloaded {
            let url = try TestMedia.make("slices-\(name)", seconds: 2, extra: options, audio: false)
            let track = try #require(try MP4Demuxer.demux(try TestMedia.bytes(url)).first)
            let configuration = try AVCDecoderConfiguration(track.codecConfiguration)
            let context = try #require(H264SliceContext(configuration: configuration))
            var parsed = 0
            for sample in track.samples {
                for unit in try NALUnit.splitLengthPrefixed(sample.data, lengthSize: configuration.lengthSize) where [1, 5].contains(NALUnit.h264Type(unit.first ?? 0)) {
                    let length = try #require(context.headerLength(ofSlice: unit), "every x264 slice header parses")
                    #expect(length >= 3 && length < unit.count && length <= 40, "header length \(length) of a \(unit.count)-byte slice")
                    // A window too short for the header is retried with a longer one, never misread.
                    #expect(context.headerLength(ofSlice: unit, prefixes: [2, 8, Int.max]) == length)
                    #expect(context.headerLength(ofSlice: unit, prefixes: [2]) == nil)
                    parsed += 1
                }
            }
            #expect(parsed == track.samples.count)
        }
    }

    @Test("escaped lengths count emulation prevention bytes")
    func escapes() {
        let escaped: [UInt8] = [1, 0, 0, 3, 1, 2, 0, 0, 3, 0, 5]
        #expect(H264SliceContext.escapedLength(of: 3, in: escaped[...]) == 3)
        #expect(H264SliceContext.escapedLength(of: 4, in: escaped[...]) == 5, "the escape before the 4th RBSP byte is included")
        #expect(H264SliceContext.escapedLength(of: 8, in: escaped[...]) == 10)
    }
}
