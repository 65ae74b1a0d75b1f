import SatchelHTTP
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

/// What an answer is before a byte of it is sent: its type, its size, and the range served. All a HEAD answers.
struct SegmentHead: Sendable {
    let contentType: String
    /// The range served (206), or nil (200).
    let range: ClosedRange<Int64>?
    /// The whole file's size (the clear size of a segment made clear); nil when it is known only once the body has
    /// been sent (a long SAMPLE-AES MPEG-TS segment re-muxed as it streams: sent chunked).
    let size: Int64?

    /// The head of a file of `size` bytes, for the range `rangeHeader` asks for (``ByteRangeRequest``; none: all).
    init(_ contentType: String, size: Int64, rangeHeader: String?) throws(PlaybackError) {
        self.contentType = contentType
        self.size = size
        do { range = try ByteRangeRequest.resolve(rangeHeader, size: size) } catch { throw .rangeNotSatisfiable(size: error.size) }
    }

    /// The head of the whole file, `size` bytes (nil: unknown until it is sent).
    init(_ contentType: String, size: Int64?) {
        self.contentType = contentType
        self.size = size
        range = nil
    }

    /// The number of bytes the body holds, when known before it is sent.
    var length: Int64? { range.map { $0.upperBound - $0.lowerBound + 1 } ?? size }

    /// The bytes of the file the body sends: the range asked for, else all of it (nil: none, an empty file).
    var served: ClosedRange<Int64>? {
        if let range { return range }
        guard let size, size > 0 else { return nil }
        return 0...(size - 1)
    }

    /// The body `make` gives for the bytes served, or an empty one (`transform`'s) when there are none.
    func body(_ transform: SegmentTransform, _ make: (ClosedRange<Int64>) -> any SegmentBody) -> any SegmentBody {
        served.map(make) ?? MemoryBody.empty(transform)
    }
}

/// One source's answer to one request, decided once: its head, found from sizes, box headers and plans (nothing sent,
/// no use registered), and its body, made only when the bytes are wanted — a GET, never a HEAD.
struct SegmentAnswer: Sendable {
    let head: SegmentHead
    /// Makes the body: where a transform's refusals (content that does not decrypt, or would leave still protected)
    /// are found that only its first bytes show.
    let body: @Sendable () async throws(PlaybackError) -> any SegmentBody

    init(_ head: SegmentHead, body: @escaping @Sendable () async throws(PlaybackError) -> any SegmentBody) {
        self.head = head
        self.body = body
    }

    /// The answer of bytes already made (`transform` made them clear): the range of them `rangeHeader` asks for.
    static func made(_ bytes: [UInt8], _ contentType: String, rangeHeader: String?, transform: SegmentTransform = .none) throws(PlaybackError) -> SegmentAnswer {
        let head = try SegmentHead(contentType, size: Int64(bytes.count), rangeHeader: rangeHeader)
        let served = head.served.map { Array(bytes[Int($0.lowerBound)...Int($0.upperBound)]) } ?? []
        return SegmentAnswer(head) { MemoryBody(served, transform: transform) }
    }

    /// A text answered whole (a playlist).
    static func text(_ text: String, _ contentType: String) -> SegmentAnswer {
        let bytes = Array(text.utf8)
        return SegmentAnswer(SegmentHead(contentType, size: Int64(bytes.count))) { MemoryBody(bytes, transform: .none) }
    }
}

/// Serves one kind of file of a session: each source owns how its bytes are opened (once, by handle, no link
/// followed), ranged, made clear and streamed.
protocol SegmentSource: Sendable {
    /// The answer to `request`.
    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer
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

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        try request.files.reportingInvalid(path) { () throws(PlaybackError) -> SegmentAnswer in throw .invalidContent(reason) }
    }
}
