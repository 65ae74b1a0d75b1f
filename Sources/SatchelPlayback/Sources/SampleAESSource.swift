import Hummingbird
import NIOCore
import SatchelBytes
import SatchelHTTP
import SatchelMedia
import SatchelProtection
import SatchelStreams
import SatchelSystem

/// A SAMPLE-AES MPEG-TS segment made clear MPEG-TS (stream types, timestamps, PCR and random-access flags kept): from
/// disk made clear where it was read (a long one streamed PES packet by PES packet); from the origin, or for a byte
/// range, made clear whole. Its continuity counters go on from the rendition's previous segment.
struct SampleAESSource: SegmentSource {
    let path: String
    let protection: SegmentProtection

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let (files, path) = (request.files, path)
        let session = files.session
        let contentType = ContentTypes.type(of: path)
        let (key, iv) = try files.reportingInvalid(path, marksWell: false) { () throws(PlaybackError) -> (SecretBytes, [UInt8]) in try files.sampleAESKey(protection) }
        let (rendition, sequence) = session.router.map.position[path] ?? (path, 0)
        let ledger = session.continuity
        if request.range == nil, let local = try files.local(path) {
            var transport = try files.reportingInvalid(path, marksWell: false) { () throws(PlaybackError) -> SampleAESTransport in
                do { return try SampleAESTransport(key: key, iv: iv, continuity: ledger.start(rendition, sequence: sequence)) } catch {
                    throw .invalidContent("the key does not fit: \(error)")
                }
            }
            let done: @Sendable (TSContinuity) -> Void = { ledger.end(rendition, sequence: sequence, $0) }
            if local.size <= Int64(files.context.configuration.transportInMemory) {
                // Read whole into the buffer it is sent from and made clear there: its length is known before the answer
                // starts, and nothing is copied to send it.
                let buffers = try files.reportingInvalid(path) { () throws(PlaybackError) -> [ByteBuffer] in try Self.clearWhole(local, &transport) }
                done(transport.continuity)
                return SegmentAnswer(SegmentHead(contentType, size: Int64(buffers.reduce(0) { $0 + $1.readableBytes }))) {
                    MemoryBody(buffers, transform: .sampleAES)
                }
            }
            // A longer one streams PES packet by PES packet: its first stretch is made clear before the answer starts
            // (so a segment whose tables or first media do not decrypt is refused with an error status), the rest is
            // sent chunked (its clear size is known only at the end).
            let transportNow = transport
            return SegmentAnswer(SegmentHead(contentType, size: nil)) { () throws(PlaybackError) -> any SegmentBody in
                try files.reportingInvalid(path) { () throws(PlaybackError) -> any SegmentBody in
                    var transport = transportNow
                    let first = try local.bytes(Int(min(local.size, Int64(Clearing.transportChunk))), at: 0)
                    let head = try Clearing.clear(path) { () throws(ProtectionError) in try transport.clear(first[...]) }
                    try ClearOutput.check(transportStream: head, of: path)
                    let events = files.context.events
                    return TSClearBody(file: local, transport: transport, from: Int64(first.count), head: head, done: done) { reason in
                        events.invalidContent(session, path: path, reason: reason)
                    }
                }
            }
        }
        let bytes = try await files.whole(path)
        let clear = try files.reportingInvalid(path) { () throws(PlaybackError) -> [UInt8] in
            var continuity = ledger.start(rendition, sequence: sequence)
            do {
                let clear = try RequestTiming.timed(.decryption) { () throws(ProtectionError) -> [UInt8] in
                    try SampleAESTransport.decrypt(bytes, key: key, iv: iv, continuity: &continuity)
                }
                ledger.end(rendition, sequence: sequence, continuity)
                return clear
            } catch { throw .invalidContent("\(path) does not decrypt: \(error)") }
        }
        try ClearOutput.check(transportStream: clear, of: path)
        return try SegmentAnswer.made(clear, contentType, rangeHeader: request.range, transform: .sampleAES)
    }

    /// The segment in `file` made clear in the buffer it was read into (``SampleAESTransport/clear(segment:)``):
    /// the buffers to send, stretches of that one and the packets made anew.
    private static func clearWhole(_ file: ConfinedFile, _ transport: inout SampleAESTransport) throws(PlaybackError) -> [ByteBuffer] {
        let path = file.name
        var segment = try file.segment(Int(file.size), at: 0)
        var outcome: Result<[TSSegmentPart], ProtectionError> = .success([])
        RequestTiming.timed(.decryption) {
            segment.withUnsafeMutableReadableBytes { bytes in
                outcome = Result { () throws(ProtectionError) in try transport.clear(segment: bytes) }
            }
        }
        let parts = try Clearing.clear(path) { () throws(ProtectionError) in try outcome.get() }
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
        return buffers
    }
}

/// The clear form of a stored SAMPLE-AES MPEG-TS segment, re-muxed PES packet by PES packet as it is read: `head`
/// (the clear bytes of the part already read, up to `from`), then the rest; its length is known only at the end
/// (sent chunked). A failure mid-way is given to `failed` (the answer ends short); `done` gets where the packets'
/// continuity counters end once it is through.
struct TSClearBody: SegmentBody {
    let file: ConfinedFile
    let transport: SampleAESTransport
    let from: Int64
    let head: [UInt8]
    let done: @Sendable (TSContinuity) -> Void
    let failed: @Sendable (String) async -> Void
    var transform: SegmentTransform { .sampleAES }

    func write(to writer: inout any ResponseBodyWriter, on channel: (any Channel)?) async throws {
        var transport = transport
        let (path, size) = (file.name, file.size)
        var offset = from
        try await writer.write(ByteBuffer(bytes: head))
        do {
            while offset < size {
                let piece = try file.bytes(Int(min(size - offset, Int64(Clearing.transportChunk))), at: offset)
                offset += Int64(piece.count)
                // The clear packets go straight from where they were made into the buffer sent (one copy).
                var clear = ByteBuffer()
                clear.reserveCapacity(piece.count + 2 * 188)
                try Clearing.clear(path) { () throws(ProtectionError) in try transport.clear(piece[...]) { clear.writeBytes($0) } }
                if clear.readableBytes > 0 { try await writer.write(clear) }
            }
            var last = ByteBuffer()
            try Clearing.clear(path) { () throws(ProtectionError) in try transport.finish { last.writeBytes($0) } }
            try await writer.write(last)
            done(transport.continuity)
        } catch let PlaybackError.invalidContent(reason) {
            await failed(reason)
            throw PlaybackError.invalidContent(reason)
        }
    }
}
