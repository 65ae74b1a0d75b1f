import SatchelBytes
import Testing
@testable import SatchelFairPlay

@Suite("TLLV codec")
struct TLLVCodecTests {
    func header(_ tag: UInt64, block: UInt32, value: UInt32) -> [UInt8] {
        var writer = ByteWriter()
        writer.writeUInt64(tag)
        writer.writeUInt32(block)
        writer.writeUInt32(value)
        return writer.bytes
    }

    @Test("blocks round-trip with their padding, in order")
    func roundTrip() throws {
        let blocks = [
            TLLV(tag: TLLVTag(1), value: [1, 2, 3]),
            TLLV(tag: TLLVTag(2), value: Array(repeating: 9, count: 16), extraBlocks: 2),
            TLLV(tag: TLLVTag(3), value: []),
        ]
        let parsed = try TLLVCodec.parse(TLLVCodec.encode(blocks))
        #expect(parsed.blocks == blocks)
        #expect(parsed[TLLVTag(2)]?.blockLength == 48)
        #expect(parsed[TLLVTag(3)]?.blockLength == 0)
    }

    @Test("padding is whole blocks of random bytes, never all 0x00 or 0xFF")
    func padding() {
        for length in 0..<40 {
            let block = TLLV(tag: TLLVTag(7), value: Array(repeating: 0, count: length), extraBlocks: length % 3)
            #expect(block.blockLength % 16 == 0)
            #expect(block.blockLength - length == (16 - length % 16) % 16 + 16 * (length % 3))
            if !block.padding.isEmpty {
                #expect(block.padding.contains { $0 != 0 })
                #expect(block.padding.contains { $0 != 0xff })
            }
        }
    }

    @Test("a block length that is not a multiple of 16 is refused")
    func blockLengthNotMultiple() {
        let payload = header(5, block: 8, value: 4) + Array(repeating: 0, count: 8) + Array(repeating: 0, count: 8)
        #expect(throws: FairPlayError.tllvBlockLengthNotMultipleOf16(TLLVTag(5), blockLength: 8)) { try TLLVCodec.parse(payload) }
    }

    @Test("a value longer than its block is refused")
    func valueLongerThanBlock() {
        let payload = header(5, block: 16, value: 17) + Array(repeating: 0, count: 16)
        #expect(throws: FairPlayError.tllvValueLongerThanBlock(TLLVTag(5), valueLength: 17, blockLength: 16)) {
            try TLLVCodec.parse(payload)
        }
    }

    @Test("a payload that does not end on a block boundary is refused")
    func misalignedPayload() {
        let payload = header(5, block: 16, value: 1) + Array(repeating: 0, count: 16) + [0, 0, 0]
        #expect(throws: FairPlayError.payloadNotBlockAligned(length: 35)) { try TLLVCodec.parse(payload) }
    }

    @Test("a block that runs past the payload is refused, even with a huge length")
    func truncatedBlock() {
        let payload = header(5, block: 0xFFFF_FFF0, value: 1) + Array(repeating: 0, count: 16)
        #expect(throws: FairPlayError.tllvTruncated(TLLVTag(5), offset: 0)) { try TLLVCodec.parse(payload) }
        // A 16-byte header followed by another header cut short.
        let cut = header(5, block: 0, value: 0) + header(6, block: 16, value: 0)
        #expect(throws: FairPlayError.tllvTruncated(TLLVTag(6), offset: 16)) { try TLLVCodec.parse(cut) }
    }

    @Test("a tag that appears twice is refused")
    func duplicateTags() {
        let block = TLLV(tag: TLLVTag(9), value: [1])
        #expect(throws: FairPlayError.duplicateTag(TLLVTag(9))) { try TLLVCodec.parse(TLLVCodec.encode([block, block])) }
    }

    @Test("tags print as 16 hex digits and know their guide names")
    func tagNames() {
        #expect(TLLVTag.streamingIndicator.description == "abb0256a31843974")
        #expect(TLLVTag.sessionKeyR1.name == "[SK...R1]")
        #expect(TLLVTag(0x1234).description == "0000000000001234")
        #expect(!TLLVTag(0x1234).isDefined)
    }
}

@Suite("TLLV lists at scale")
struct TLLVListScaleTests {
    @Test("thousands of blocks and return tags stay fast and exact (hash index above 64 blocks)")
    func largeLists() throws {
        let blocks = (0..<5000).map { TLLV(tag: TLLVTag(UInt64($0) &* 0x9E37_79B9), value: [UInt8(truncatingIfNeeded: $0)]) }
        let list = try TLLVCodec.parse(TLLVCodec.encode(blocks))
        #expect(list.blocks.count == 5000)
        for probe in [0, 63, 64, 4999] {
            #expect(list[TLLVTag(UInt64(probe) &* 0x9E37_79B9)]?.value == [UInt8(truncatingIfNeeded: probe)])
        }
        #expect(list[TLLVTag(1)] == nil)
        #expect(throws: FairPlayError.duplicateTag(blocks[10].tag)) { try TLLVList(blocks + [blocks[10]]) }
    }
}
