import Foundation
import SatchelBytes
import SatchelFuzzTargets
import Testing
@testable import SatchelMedia

/// The `sidx` reader (DASH SegmentBase) and the TS remuxer's timestamps.
@Suite struct SegmentIndexTests {
    @Test("sidx: subsegment ranges anchored after the box (plus first_offset), times and durations; truncated, hierarchical and empty references are refused")
    func segmentIndex() throws {
        let box = FuzzCorpus.segmentIndex
        let index = try SegmentIndex(box, at: 1_000)
        let start = Int64(1_000 + box.count)
        #expect(index.timescale == 1_000)
        #expect(index.references.map(\.range) == [start...(start + 4_999), (start + 5_000)...(start + 10_999), (start + 11_000)...(start + 17_999)])
        #expect(index.references.map(\.time) == [0, 2_000, 4_000] && index.references.allSatisfy { $0.duration == 2_000 })
        #expect(throws: MediaError.self) { try SegmentIndex(Array(box.dropLast(4)), at: 0) }
        var hierarchical = box
        hierarchical[32] |= 0x80
        #expect(throws: MediaError.self) { try SegmentIndex(hierarchical, at: 0) }
        var empty = box
        empty.replaceSubrange(32..<36, with: [0, 0, 0, 0])
        #expect(throws: MediaError.self) { try SegmentIndex(empty, at: 0) }
        var notIndex = box
        notIndex.replaceSubrange(4..<8, with: Array("free".utf8))
        #expect(throws: MediaError.self) { try SegmentIndex(notIndex, at: 0) }
    }

    @Test("TS timestamps: the packager's formula (ticks × 90000 / timescale + 1.4 s); values too large to multiply wrap instead of trapping")
    func timestamps() {
        #expect(TSRemuxer.ticks90k(0, timescale: 48_000) == 126_000)
        #expect(TSRemuxer.ticks90k(48_000, timescale: 48_000) == 216_000)
        #expect(TSRemuxer.ticks90k(1_024, timescale: 44_100) == 1_024 * 90_000 / 44_100 + 126_000)
        #expect(TSRemuxer.ticks90k(-512, timescale: 12_800) == -3_600 + 126_000)
        _ = TSRemuxer.ticks90k(.max, timescale: 1)
        _ = TSRemuxer.ticks90k(.min, timescale: 0)
    }
}
