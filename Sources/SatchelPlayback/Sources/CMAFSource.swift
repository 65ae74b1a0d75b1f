import SatchelBytes
import SatchelHTTP
import SatchelProtection
import SatchelStreams

/// A CMAF `cbcs` or `cenc` fragment made clear with its init segment's `tenc`: from disk streamed fragment by
/// fragment (the clear length known from the box headers and `moof`s alone, samples decrypted in the buffer read);
/// from the origin, or for a byte range, made clear whole.
struct CMAFSource: SegmentSource {
    let path: String
    let protection: SegmentProtection

    func respond(_ request: SourceRequest) async throws(PlaybackError) -> PlaybackResponse {
        let files = request.files
        let contentType = ContentTypes.type(of: path)
        guard let decryptor = try await files.fmp4Decryptor(protection) else {
            return try await UndecryptableSource(path: path, reason: "\(path) has no init segment to decrypt it with").respond(request)
        }
        let key = try files.reportingInvalid(path, marksWell: false) { () throws(PlaybackError) -> SecretBytes in try SessionFiles.key(files.session.keys, of: decryptor) }
        if request.range == nil, let local = try files.local(path) {
            return try files.reportingInvalid(path) { () throws(PlaybackError) -> PlaybackResponse in
                try PlaybackResponse.clearing(local, decryptor: decryptor, key: key, contentType: contentType)
            }
        }
        let bytes = try await files.whole(path)
        let clear = try files.reportingInvalid(path) { () throws(PlaybackError) -> [UInt8] in
            do { return try RequestTiming.timed(.decryption) { () throws(ProtectionError) -> [UInt8] in try decryptor.clearSegment(bytes, key: key) } } catch { throw .invalidContent("\(path) does not decrypt: \(error)") }
        }
        try ClearOutput.check(clear, of: path)
        return try PlaybackResponse.ranged(clear, contentType: contentType, rangeHeader: request.range)
    }
}

/// A protected CMAF init segment without `sinf` and `pssh`, its `encv` / `enca` sample entries `avc1` / `mp4a` again.
struct ClearedInitSource: SegmentSource {
    let path: String

    func respond(_ request: SourceRequest) async throws(PlaybackError) -> PlaybackResponse {
        let files = request.files
        let bytes = try await files.whole(path)
        let clear = try files.reportingInvalid(path) { () throws(PlaybackError) -> [UInt8] in
            do { return try FMP4Decryptor.clearInitSegment(bytes) } catch { throw .invalidContent("\(path): \(error)") }
        }
        try ClearOutput.check(clear, of: path)
        return try PlaybackResponse.ranged(clear, contentType: ContentTypes.type(of: path), rangeHeader: request.range)
    }
}
