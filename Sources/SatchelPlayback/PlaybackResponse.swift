import Foundation
import NIOCore
import SatchelBytes
import SatchelHTTP
import SatchelMedia
import SatchelProtection
import SatchelSystem

/// What the proxy answers for one file: its body (the range asked for, or all of it), type and size.
struct PlaybackResponse: Sendable {
    var body: PlaybackBody
    var contentType: String
    /// The range served (206), or nil (200).
    var range: ClosedRange<Int64>?
    /// The whole file's size (clear size for a decrypted segment); nil when it is known only once the body has
    /// been made (a SAMPLE-AES MPEG-TS segment re-muxed as it streams: sent chunked).
    var size: Int64?

    /// The number of bytes the body holds, when known before it is sent.
    var length: Int64? { range.map { $0.upperBound - $0.lowerBound + 1 } ?? size }

    /// The bytes of `whole` that `rangeHeader` asks for.
    static func ranged(_ whole: [UInt8], contentType: String, rangeHeader: String?) throws(PlaybackError) -> PlaybackResponse {
        let size = Int64(whole.count)
        guard let range = try range(rangeHeader, size: size) else {
            return PlaybackResponse(body: .bytes(whole), contentType: contentType, range: nil, size: size)
        }
        return PlaybackResponse(body: .bytes(Array(whole[Int(range.lowerBound)...Int(range.upperBound)])), contentType: contentType, range: range, size: size)
    }

    /// The bytes of `whole` (a buffer made for the answer) that `rangeHeader` asks for, sent from where they lie.
    static func ranged(_ whole: ByteBuffer, contentType: String, rangeHeader: String?) throws(PlaybackError) -> PlaybackResponse {
        let size = Int64(whole.readableBytes)
        guard let range = try range(rangeHeader, size: size) else {
            return PlaybackResponse(body: .buffers([whole]), contentType: contentType, range: nil, size: size)
        }
        guard let slice = whole.getSlice(at: whole.readerIndex + Int(range.lowerBound), length: Int(range.upperBound - range.lowerBound) + 1) else {
            throw .rangeNotSatisfiable(size: size)
        }
        return PlaybackResponse(body: .buffers([slice]), contentType: contentType, range: range, size: size)
    }

    /// A stored file streamed, the range asked for or all of it.
    static func file(_ file: ConfinedFile, contentType: String, rangeHeader: String?) throws(PlaybackError) -> PlaybackResponse {
        let size = file.size
        guard let range = try range(rangeHeader, size: size) else {
            return PlaybackResponse(body: size == 0 ? .empty : .file(file, range: 0...(size - 1)), contentType: contentType, range: nil, size: size)
        }
        return PlaybackResponse(body: .file(file, range: range), contentType: contentType, range: range, size: size)
    }

    /// An AES-128 segment decrypted as it streams; its clear size comes from its last block's padding.
    static func decrypting(_ file: ConfinedFile, cipher: SegmentCipher, iv: [UInt8], contentType: String,
                           rangeHeader: String?) throws(PlaybackError) -> PlaybackResponse {
        let stored = file.size
        guard stored >= 16, stored % 16 == 0 else { throw .invalidContent("an AES-128 segment of \(stored) bytes is not whole blocks") }
        let tail = Array(try file.segment(Int(min(stored, 32)), at: max(stored - 32, 0)).readableBytesView)
        let padding: Int
        do {
            padding = try cipher.paddingLength(last: Array(tail.suffix(16)), previous: tail.count == 32 ? Array(tail.prefix(16)) : iv)
        } catch {
            throw .invalidContent("it does not decrypt (\(error))")
        }
        let size = stored - Int64(padding)
        // Its clear start (an MPEG-TS program map comes in its first packets), checked for a stream it would still
        // hand the player encrypted: AES-128 over SAMPLE-AES.
        var start = try file.segment(Int(min(stored, 4096)), at: 0)
        try PlaybackBody.decrypt(&start, of: file.name) { (blocks) throws(ProtectionError) in try cipher.decryptBlocks(in: blocks, iv: iv) }
        try ClearOutput.check(transportStream: Array(start.readableBytesView), of: file.name)
        guard let range = try range(rangeHeader, size: size) else {
            return PlaybackResponse(body: size == 0 ? .empty : .aes128(file, cipher: cipher, iv: iv, range: 0...(size - 1)),
                                    contentType: contentType, range: nil, size: size)
        }
        return PlaybackResponse(body: .aes128(file, cipher: cipher, iv: iv, range: range), contentType: contentType, range: range, size: size)
    }

    /// A CMAF `cenc` / `cbcs` segment made clear as it streams; its clear size comes from its box headers.
    static func clearing(_ file: ConfinedFile, decryptor: FMP4Decryptor, key: SecretBytes, contentType: String) throws(PlaybackError) -> PlaybackResponse {
        let plan: FMP4ClearPlan
        let cipher: CommonEncryption
        do {
            plan = try FMP4ClearPlan(size: file.size, decryptor: decryptor) { (offset, count) throws(ProtectionError) -> [UInt8] in
                do { return try file.read(count, at: offset) } catch { throw .malformed("the segment cannot be read: \(error)") }
            }
            cipher = try decryptor.cipher(key)
        } catch {
            throw .invalidContent("\(file.name) does not decrypt: \(error)")
        }
        for case let .made(bytes) in plan.parts { try ClearOutput.check(bytes, of: file.name) }
        return PlaybackResponse(body: plan.size == 0 ? .empty : .clearFMP4(file, plan: plan, decryptor: decryptor, cipher: cipher),
                                contentType: contentType, range: nil, size: plan.size)
    }

    /// A SAMPLE-AES MPEG-TS segment made clear. One of at most `inMemory` bytes is read whole into the buffer
    /// it is sent from and made clear there (``SampleAESTransport/clear(segment:)``): its length is known before the
    /// answer starts, and nothing is copied to send it. A longer one streams PES packet by PES packet; its first
    /// stretch is made clear before the answer starts (so a segment whose tables or first media do not decrypt is
    /// refused with an error status) and the rest is sent chunked (its clear size is known only at the end).
    /// Its packets' continuity counters go on from `continuity`; `done` gets where they end once it is through.
    static func clearingTransport(_ file: ConfinedFile, key: SecretBytes, iv: [UInt8], contentType: String, continuity: TSContinuity,
                                  inMemory: Int, done: @escaping @Sendable (TSContinuity) -> Void,
                                  failed: @escaping @Sendable (String) async -> Void) throws(PlaybackError) -> PlaybackResponse {
        let stored = file.size
        let path = file.name
        var transport: SampleAESTransport
        do { transport = try SampleAESTransport(key: key, iv: iv, continuity: continuity) } catch { throw .invalidContent("the key does not fit: \(error)") }
        if stored <= Int64(inMemory) {
            var segment = try file.segment(Int(stored), at: 0)
            var outcome: Result<[TSSegmentPart], ProtectionError> = .success([])
            RequestTiming.timed(.decryption) {
                segment.withUnsafeMutableReadableBytes { bytes in
                    outcome = Result { () throws(ProtectionError) in try transport.clear(segment: bytes) }
                }
            }
            let parts = try PlaybackBody.clearing(path) { () throws(ProtectionError) in try outcome.get() }
            var buffers: [ByteBuffer] = []
            for part in parts {
                switch part {
                case let .stored(range):
                    guard let slice = segment.getSlice(at: segment.readerIndex + range.lowerBound, length: range.count) else {
                        throw .storage("\(path) shrank while it was served")
                    }
                    buffers.append(slice)
                case let .made(made):
                    buffers.append(ByteBuffer(bytes: made))
                }
            }
            var start: [UInt8] = []
            for buffer in buffers where start.count < ClearOutput.transportHead { start += buffer.readableBytesView }
            try ClearOutput.check(transportStream: start, of: path)
            done(transport.continuity)
            return PlaybackResponse(body: .buffers(buffers), contentType: contentType, range: nil,
                                    size: Int64(buffers.reduce(0) { $0 + $1.readableBytes }))
        }
        let first = try file.bytes(PlaybackBody.transportChunk, at: 0)
        let head = try PlaybackBody.clearing(path) { () throws(ProtectionError) in try transport.clear(first[...]) }
        try ClearOutput.check(transportStream: head, of: path)
        return PlaybackResponse(body: .clearTS(file, transport: transport, from: Int64(first.count), head: head, done: done, failed: failed),
                                contentType: contentType, range: nil, size: nil)
    }

    /// The range `rangeHeader` asks for (``ByteRangeRequest``), a refusal as the proxy's error.
    static func range(_ rangeHeader: String?, size: Int64) throws(PlaybackError) -> ClosedRange<Int64>? {
        do { return try ByteRangeRequest.resolve(rangeHeader, size: size) } catch { throw .rangeNotSatisfiable(size: error.size) }
    }
}
