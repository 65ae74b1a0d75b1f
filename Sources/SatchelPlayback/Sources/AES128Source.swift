import Hummingbird
import NIOCore
import SatchelHTTP
import SatchelProtection
import SatchelStreams
import SatchelSystem

/// A whole-segment AES-128 segment, clear: from disk streamed and decrypted block by block (any byte range decrypts
/// from the block before it, so the first bytes go out at once); from the origin decrypted once whole. Its clear
/// size comes from its last block's padding.
struct AES128Source: SegmentSource {
    let path: String
    let protection: SegmentProtection

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let (files, path, iv) = (request.files, path, protection.iv)
        let contentType = ContentTypes.type(of: path)
        let cipher = try files.reportingInvalid(path, marksWell: false) { () throws(PlaybackError) -> SegmentCipher in try files.cipher(protection) }
        if let local = try files.local(path) {
            let stored = local.size
            let tail = stored >= 16 ? Array(try local.segment(Int(min(stored, 32)), at: max(stored - 32, 0)).readableBytesView) : []
            let head = try files.reportingInvalid(path) { () throws(PlaybackError) -> SegmentHead in
                try SegmentHead(contentType, size: stored - Int64(try Self.padding(cipher, stored: stored, tail: tail, iv: iv)), rangeHeader: request.range)
            }
            return SegmentAnswer(head) { () throws(PlaybackError) -> any SegmentBody in
                // Its clear start (an MPEG-TS program map comes in its first packets), checked for a stream it would
                // still hand the player encrypted: AES-128 over SAMPLE-AES.
                try files.reportingInvalid(path) { () throws(PlaybackError) -> any SegmentBody in
                    var start = try local.segment(Int(min(stored, 4096)), at: 0)
                    try Clearing.decrypt(&start, of: path) { (blocks) throws(ProtectionError) in try cipher.decryptBlocks(in: blocks, iv: iv) }
                    try ClearOutput.check(transportStream: Array(start.readableBytesView), of: path)
                    return head.body(.aes128) { AES128Body(file: local, cipher: cipher, iv: iv, range: $0) }
                }
            }
        }
        let bytes = try await files.whole(path)
        let clear = try files.reportingInvalid(path) { () throws(PlaybackError) -> [UInt8] in
            do { return try RequestTiming.timed(.decryption) { () throws(ProtectionError) -> [UInt8] in try cipher.decrypt(bytes, iv: iv) } } catch { throw .invalidContent("\(path) does not decrypt: \(error)") }
        }
        try ClearOutput.check(transportStream: clear, of: path)
        return try SegmentAnswer.made(clear, contentType, rangeHeader: request.range, transform: .aes128)
    }

    /// The padding of a stored segment of `stored` bytes whose last (up to) 32 bytes are `tail`.
    private static func padding(_ cipher: SegmentCipher, stored: Int64, tail: [UInt8], iv: [UInt8]) throws(PlaybackError) -> Int {
        guard stored >= 16, stored % 16 == 0 else { throw .invalidContent("an AES-128 segment of \(stored) bytes is not whole blocks") }
        do {
            return try cipher.paddingLength(last: Array(tail.suffix(16)), previous: tail.count == 32 ? Array(tail.prefix(16)) : iv)
        } catch {
            throw .invalidContent("it does not decrypt (\(error))")
        }
    }
}

/// `range` of the clear content of a stored AES-128 segment (whole-segment CBC, IV `iv`), decrypted as it is read.
struct AES128Body: SegmentBody {
    let file: ConfinedFile
    let cipher: SegmentCipher
    let iv: [UInt8]
    let range: ClosedRange<Int64>
    var transform: SegmentTransform { .aes128 }

    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws {
        // CBC decrypts from any block given the cipher block before it: start at the block holding the range.
        let path = file.name
        let firstBlock = range.lowerBound / 16 * 16
        var chain = firstBlock == 0 ? iv : Array(try file.segment(16, at: firstBlock - 16).readableBytesView)
        var position = firstBlock  // clear offset of the next block read
        while position <= range.upperBound {
            let wanted = min(Int64(Clearing.chunk), (range.upperBound / 16 + 1) * 16 - position)
            // Read straight into the buffer sent and decrypted there.
            var buffer = try file.segment(Int(wanted), at: position)
            let count = buffer.readableBytes
            guard count % 16 == 0, count > 0 else { throw PlaybackError.invalidContent("\(Clearing.name(path)): not whole AES blocks") }
            let next = Array(buffer.readableBytesView.suffix(16))
            try Clearing.decrypt(&buffer, of: path) { (blocks) throws(ProtectionError) in try cipher.decryptBlocks(in: blocks, iv: chain) }
            chain = next
            let from = Int(max(range.lowerBound - position, 0))
            let to = Int(min(range.upperBound - position + 1, Int64(count)))
            if from < to, let clear = buffer.getSlice(at: buffer.readerIndex + from, length: to - from) { try await writer.write(clear) }
            position += Int64(count)
        }
    }
}
