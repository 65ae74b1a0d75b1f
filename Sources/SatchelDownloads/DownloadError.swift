/// Why a download cannot be planned or run. Cases say what to do.
public enum DownloadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Live streams cannot be downloaded to go.
    case liveStream(String)
    /// The manifest format is not HLS, DASH, Smooth or a single file.
    case unknownFormat(String)
    /// The manifest is malformed.
    case malformedManifest(String)
    /// Nothing in the manifest fits the selection.
    case nothingSelected(String)

    public var description: String {
        switch self {
        case let .liveStream(url): return "\(url) is a live stream (no EXT-X-ENDLIST / dynamic MPD); only on-demand assets can be downloaded"
        case let .unknownFormat(url): return "\(url) is not an HLS, DASH or Smooth Streaming manifest"
        case let .malformedManifest(reason): return "malformed manifest: \(reason)"
        case let .nothingSelected(reason): return "nothing to download: \(reason)"
        }
    }
}
