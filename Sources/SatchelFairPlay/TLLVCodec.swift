import SatchelBytes

/// Parses and writes payloads made of TLLV blocks.
package enum TLLVCodec {
    /// Parses a decrypted SPC or CKC payload.
    ///
    /// Rejects a payload that is not a whole number of 16-byte blocks, a block length
    /// that is not a multiple of 16, a value longer than its block, a block that runs
    /// past the payload, and a tag that appears twice.
    package static func parse(_ payload: [UInt8]) throws(FairPlayError) -> TLLVList {
        guard payload.count % 16 == 0 else { throw .payloadNotBlockAligned(length: payload.count) }
        var reader = ByteReader(payload)
        var blocks: [TLLV] = []
        blocks.reserveCapacity(32)
        while !reader.isAtEnd {
            let start = reader.offset
            do {
                let tag = TLLVTag(try reader.readUInt64())
                let blockLength = Int(try reader.readUInt32())
                let valueLength = Int(try reader.readUInt32())
                guard blockLength % 16 == 0 else {
                    throw FairPlayError.tllvBlockLengthNotMultipleOf16(tag, blockLength: blockLength)
                }
                guard valueLength <= blockLength else {
                    throw FairPlayError.tllvValueLongerThanBlock(tag, valueLength: valueLength, blockLength: blockLength)
                }
                guard blockLength <= reader.remaining else {
                    throw FairPlayError.tllvTruncated(tag, offset: start)
                }
                let blockStart = reader.offset
                try reader.skip(blockLength)
                blocks.append(TLLV(tag: tag, block: payload[blockStart..<reader.offset], valueLength: valueLength))
            } catch let error as FairPlayError {
                throw error
            } catch {
                throw .tllvTruncated(nil, offset: start)
            }
        }
        return try TLLVList(blocks)
    }

    /// Concatenates blocks into a payload.
    package static func encode(_ blocks: [TLLV]) -> [UInt8] {
        var writer = ByteWriter(capacity: blocks.reduce(0) { $0 + TLLV.headerSize + $1.blockLength })
        for block in blocks { block.write(to: &writer) }
        return writer.bytes
    }
}
