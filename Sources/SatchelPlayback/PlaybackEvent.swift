import SatchelRights

/// What the proxy reports while sessions play (seed 000 §5.4's playback events), in order.
public enum PlaybackEvent: Sendable, Equatable {
    /// A session opened for an asset.
    case opened(asset: String)
    /// The asset's rights ended while it played: no more segments or keys are served (once per session).
    case rightsExpired(asset: String, status: RightsStatus)
    /// The device's clock went back: date-based rights are untrusted until the server confirms the time.
    case untrustedTime(asset: String)
    /// A file failed to parse or decrypt.
    case invalidContent(asset: String, path: String, reason: String)
    /// A file the playlists list is not downloaded: it was answered 503.
    case notCached(asset: String, path: String)
    /// A session closed.
    case closed(asset: String)

    /// One line for a log or stderr (no token, no key, no URL).
    public var line: String {
        switch self {
        case let .opened(asset): return "opened: \(asset)"
        case let .rightsExpired(asset, status): return "rights-expired: \(asset) (\(status.rawValue)); no more segments are served"
        case let .untrustedTime(asset): return "untrusted-time: \(asset): the device clock went back; playback stops until the server's time confirms it"
        case let .invalidContent(asset, path, reason): return "invalid-content: \(asset)/\(path): \(reason)"
        case let .notCached(asset, path): return "not-cached: \(asset)/\(path) is not downloaded (answered 503)"
        case let .closed(asset): return "closed: \(asset)"
        }
    }
}
