import SatchelStreams

/// One request to a source: the session's files, the range asked for, and for a forwarded key the request's body.
struct SourceRequest: Sendable {
    let files: SessionFiles
    /// The `Range` header.
    let range: String?
    /// A POST body (forwarded license requests only).
    let body: [UInt8]?
    /// The body's Content-Type.
    let contentType: String?
}

/// Serves one kind of file of a session: each source owns how its bytes are opened (once, by handle, no link
/// followed), ranged, decrypted and streamed.
protocol SegmentSource: Sendable {
    /// The answer to `request`.
    func respond(_ request: SourceRequest) async throws(PlaybackError) -> PlaybackResponse
}

extension StreamRoute {
    /// The source that serves this route.
    var source: any SegmentSource {
        switch self {
        case let .playlist(path): PlaylistSource(path: path, passThrough: false)
        case let .manifest(path): PlaylistSource(path: path, passThrough: true)
        case .transcriptMaster: TranscriptSource(path: HLSTranscript.masterPath, resource: .master)
        case let .transcriptPlaylist(index): TranscriptSource(path: "", resource: .playlist(index))
        case let .transcriptSegment(path, segment): TranscriptSource(path: path, resource: .segment(segment))
        case let .storedFile(path): StoredFileSource(path: path)
        case let .aes128(path, protection): AES128Source(path: path, protection: protection)
        case let .sampleAESTransport(path, protection): SampleAESSource(path: path, protection: protection)
        case let .cmafFragment(path, protection): CMAFSource(path: path, protection: protection)
        case let .clearedInitSegment(path): ClearedInitSource(path: path)
        case let .forwardedKey(path, target): ForwardedKeySource(path: path, target: target)
        case let .singleFile(path): SingleFileSource(path: path)
        case let .undecryptable(path, reason): UndecryptableSource(path: path, reason: reason)
        }
    }
}

/// A protected segment the proxy cannot decrypt: reported as invalid content.
struct UndecryptableSource: SegmentSource {
    let path: String
    let reason: String

    func respond(_ request: SourceRequest) async throws(PlaybackError) -> PlaybackResponse {
        try request.files.reportingInvalid(path) { () throws(PlaybackError) -> PlaybackResponse in throw .invalidContent(reason) }
    }
}
