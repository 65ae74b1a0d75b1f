import SatchelBytes

/// Why a manifest cannot be planned, transcribed or mapped. The download engine and the playback proxy each say it
/// in their own terms (``code`` stays the same where they share a meaning).
public enum StreamError: ProblemConvertible, Equatable {
    /// A live stream, where only on-demand content is accepted.
    case liveStream(String)
    /// Text that is none of the manifests (HLS, DASH, Smooth Streaming).
    case unknownFormat(String)
    /// A manifest that does not parse or says something impossible.
    case malformedManifest(String)
    /// Nothing in the manifest fits the selection.
    case nothingSelected(String)
    /// A single file whose MIME type is not permitted.
    case mimeNotPermitted(url: String, mimeType: String)
    /// A file whose local path would leave the asset's folder.
    case unsafePath(url: String, reason: String)
    /// A bad argument (a MIME type list).
    case invalidArgument(String)
    /// Content that cannot be played as it is (a playlist the proxy cannot follow, a transcript it cannot make).
    case invalidContent(String)

    /// A stable identifier per case.
    public var code: String {
        switch self {
        case .liveStream: "live-stream"
        case .unknownFormat: "unknown-format"
        case .malformedManifest: "malformed-manifest"
        case .nothingSelected: "nothing-selected"
        case .mimeNotPermitted: "mime-not-permitted"
        case .unsafePath: "unsafe-resource"
        case .invalidArgument: "invalid-argument"
        case .invalidContent: "invalid-content"
        }
    }

    /// 400: the request names something that cannot be used; 502 for content.
    public var httpStatus: Int {
        switch self {
        case .invalidContent: 502
        default: 400
        }
    }

    public var description: String {
        switch self {
        case let .liveStream(url): "\(url) is a live stream (no EXT-X-ENDLIST / dynamic MPD / IsLive); only on-demand assets can be downloaded"
        case let .unknownFormat(url): "\(url) is neither a media file nor an HLS, DASH or Smooth Streaming manifest"
        case let .malformedManifest(reason): "malformed manifest: \(reason)"
        case let .nothingSelected(reason): "nothing to download: \(reason)"
        case let .mimeNotPermitted(url, type): "\(url) has MIME type \(type), which is not permitted"
        case let .unsafePath(url, reason): "\(url): \(reason)"
        case let .invalidArgument(reason): reason
        case let .invalidContent(reason): reason
        }
    }
}
