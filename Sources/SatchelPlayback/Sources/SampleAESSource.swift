import SatchelBytes
import SatchelHTTP
import SatchelProtection
import SatchelStreams

/// A SAMPLE-AES MPEG-TS segment made clear MPEG-TS (stream types, timestamps, PCR and random-access flags kept): from
/// disk made clear where it was read (a long one streamed PES packet by PES packet); from the origin, or for a byte
/// range, made clear whole. Its continuity
/// counters go on from the rendition's previous segment.
struct SampleAESSource: SegmentSource {
    let path: String
    let protection: SegmentProtection

    func respond(_ request: SourceRequest) async throws(PlaybackError) -> PlaybackResponse {
        let files = request.files
        let session = files.session
        let contentType = ContentTypes.type(of: path)
        let (key, iv) = try files.reportingInvalid(path, marksWell: false) { () throws(PlaybackError) -> (SecretBytes, [UInt8]) in try files.sampleAESKey(protection) }
        let (rendition, sequence) = session.router.map.position[path] ?? (path, 0)
        let ledger = session.continuity
        if request.range == nil, let local = try files.local(path) {
            let (events, path) = (files.context.events, path)
            return try files.reportingInvalid(path) { () throws(PlaybackError) -> PlaybackResponse in
                try PlaybackResponse.clearingTransport(local, key: key, iv: iv, contentType: contentType,
                                                       continuity: ledger.start(rendition, sequence: sequence),
                                                       inMemory: files.context.configuration.transportInMemory,
                                                       done: { ledger.end(rendition, sequence: sequence, $0) }) { reason in
                    events.invalidContent(session, path: path, reason: reason)
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
        return try PlaybackResponse.ranged(clear, contentType: contentType, rangeHeader: request.range)
    }
}
