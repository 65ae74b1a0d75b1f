import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelMedia

/// fMP4 samples remuxed to MPEG-2 TS straight into memory had for it first (the proxy's answer buffer).
@Suite("TS remux into given memory")
struct TSRemuxerTests {
    @Test("a prepared segment written into memory of its maximum size is the array's bytes exactly, a little under the bound; counters go on alike; less memory overflows and writes nothing past its end")
    func intoMemory() async throws {
        try await TestMedia.offloaded {
            let tracks = try MP4Demuxer.demux(try TestMedia.bytes(try TestMedia.make("remux-memory", seconds: 4)))
            let prepared = try TSRemuxer.Prepared(tracks)
            var arrayContinuity = TSContinuity(discontinuity: true)
            let expected = try TSRemuxer.segment(tracks, continuity: &arrayContinuity)
            #expect(expected.count % 188 == 0 && expected.count <= prepared.maximumSize && prepared.maximumSize < expected.count * 11 / 10,
                    "\(expected.count) bytes, bound \(prepared.maximumSize)")
            #expect(try TSDemuxer.demux(expected).map(\.samples.count) == tracks.map(\.samples.count))

            let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: prepared.maximumSize + 16, alignment: 16)
            defer { memory.deallocate() }
            var continuity = TSContinuity(discontinuity: true)
            var out = TSBufferOutput(UnsafeMutableRawBufferPointer(rebasing: memory[..<prepared.maximumSize]))
            prepared.write(continuity: &continuity, into: &out)
            #expect(!out.overflowed && Array(memory[..<out.count]) == expected)
            #expect(continuity == arrayContinuity)

            // Short by one packet: the write stops, marks the overflow, and the bytes after the memory given stay as they were.
            memory.initializeMemory(as: UInt8.self, repeating: 0xA5)
            var short = TSBufferOutput(UnsafeMutableRawBufferPointer(rebasing: memory[..<(expected.count - 188)]))
            var again = TSContinuity()
            prepared.write(continuity: &again, into: &short)
            #expect(short.overflowed && short.count <= expected.count - 188)
            #expect(memory[(expected.count - 188)...].allSatisfy { $0 == 0xA5 })
        }
    }
}
