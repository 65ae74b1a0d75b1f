import SatchelHTTP
import SatchelProtection
import SatchelStreams

/// A whole-segment AES-128 segment, clear: from disk streamed and decrypted block by block (any byte range decrypts
/// from the block before it, so the first bytes go out at once); from the origin decrypted once whole.
struct AES128Source: SegmentSource {
    let path: String
    let protection: SegmentProtection

    func respond(_ request: SourceRequest) async throws(PlaybackError) -> PlaybackResponse {
        let files = request.files
        let contentType = ContentTypes.type(of: path)
        let cipher = try files.reportingInvalid(path, marksWell: false) { () throws(PlaybackError) -> SegmentCipher in try files.cipher(protection) }
        if let local = try files.local(path) {
            return try files.reportingInvalid(path) { () throws(PlaybackError) -> PlaybackResponse in
                try PlaybackResponse.decrypting(local, cipher: cipher, iv: protection.iv, contentType: contentType, rangeHeader: request.range)
            }
        }
        let bytes = try await files.whole(path)
        let clear = try files.reportingInvalid(path) { () throws(PlaybackError) -> [UInt8] in
            do { return try RequestTiming.timed(.decryption) { () throws(ProtectionError) -> [UInt8] in try cipher.decrypt(bytes, iv: protection.iv) } } catch { throw .invalidContent("\(path) does not decrypt: \(error)") }
        }
        try ClearOutput.check(transportStream: clear, of: path)
        return try PlaybackResponse.ranged(clear, contentType: contentType, rangeHeader: request.range)
    }
}
