import SatchelRights

/// What the proxy reports while sessions play (a DRM agent's playback events), in order.
public enum PlaybackEvent: Sendable, Equatable {
    /// A session opened for an asset; for a downloaded asset, how much of it is cached.
    case opened(asset: String, cache: CacheState?)
    /// The asset's rights ended while it played: no more segments or keys are served (once per session).
    case rightsExpired(asset: String, status: RightsStatus)
    /// The device's clock went back: date-based rights are untrusted until the server confirms the time.
    case untrustedTime(asset: String)
    /// A file failed to parse or decrypt (once, then again only after a file has played well).
    case invalidContent(asset: String, path: String, reason: String)
    /// A file the playlists list is neither downloaded nor known to the origin: it was answered 503.
    case notCached(asset: String, path: String)
    /// The origin answered a file with an error status (forwarded to the player), or could not be reached
    /// (`status` nil: answered 503 so the player asks again); `url` is the origin's address of the file, without its
    /// query (which may hold a token).
    case serverError(asset: String, path: String, status: Int?, reason: String, url: String? = nil)
    /// A file fetched from the origin for an asset being downloaded could not be kept in the download store (a
    /// rule, a full disk): it was played all the same, and the download will fetch it again.
    case notStored(asset: String, path: String, reason: String)
    /// Something failed that playback is unlikely to recover from (content protected with a key the license
    /// does not hold): the player should be stopped.
    case shouldAbort(asset: String, reason: String)
    /// The proxy is about to cut the session's feed (it is stopping).
    case willAbort(asset: String, reason: String)
    /// A session closed.
    case closed(asset: String)

    /// One line for a log or stderr (no token, no key, no URL).
    public var line: String {
        switch self {
        case let .opened(asset, cache):
            guard let cache else { return "opened: \(asset)" }
            let ready = cache.isReadyToPlay ? "ready to play" : "not ready to play offline"
            return "opened: \(asset) (cached \(Self.seconds(cache.cachedDuration)) of \(Self.seconds(cache.totalDuration)), \(ready))"
        case let .rightsExpired(asset, status): return "rights-expired: \(asset) (\(status.rawValue)); no more segments are served"
        case let .untrustedTime(asset): return "untrusted-time: \(asset): the device clock went back; playback stops until the server's time confirms it"
        case let .invalidContent(asset, path, reason): return "invalid-content: \(asset)/\(path): \(reason)"
        case let .notCached(asset, path): return "not-cached: \(asset)/\(path) is not downloaded (answered 503)"
        case let .serverError(asset, path, status, reason, url):
            return "server-error: \(asset)/\(path)\(url.map { " (\($0))" } ?? ""): \(reason) (answered \(status ?? 503))"
        case let .notStored(asset, path, reason): return "not-stored: \(asset)/\(path) played but was not kept: \(reason)"
        case let .shouldAbort(asset, reason): return "should-abort: \(asset): \(reason); stop the player"
        case let .willAbort(asset, reason): return "will-abort: \(asset): \(reason)"
        case let .closed(asset): return "closed: \(asset)"
        }
    }

    static func seconds(_ value: Double) -> String {
        guard value.isFinite else { return "? s" }
        return String(format: "%.1f s", value)
    }
}

extension PlaybackEvent {
    /// `url` without its query and fragment, for a notice (a query may hold a token, and never goes into one).
    static func withoutQuery(_ url: String) -> String {
        String(url.prefix { $0 != "?" && $0 != "#" })
    }
}
