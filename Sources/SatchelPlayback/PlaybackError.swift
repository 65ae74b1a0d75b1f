import SatchelStreams
import SatchelBytes
import SatchelRights

/// Why the playback proxy refused. Never carries keys, tokens or session URLs.
public enum PlaybackError: ProblemConvertible, Equatable {
    /// No live session has this token, or the session has no such file (the answer reveals nothing more).
    case notFound
    /// The asset cannot play now: its rights status (or `expired` / `in-future` for its availability window).
    case notPlayable(RightsStatus)
    /// The asset is not in the download store.
    case unknownAsset(String)
    /// The proxy binds to loopback addresses only.
    case notLoopback(String)
    /// A file of the asset cannot be parsed or decrypted.
    case invalidContent(String)
    /// The content is protected in a way the proxy cannot make clear (named): refused, never handed to a player as media.
    case unsupportedProtection(String)
    /// The content is protected with a key the license does not hold.
    case noKey(String)
    /// A file the playlists list is not in the store (not downloaded yet): 503, never a hang.
    case notCached(String)
    /// A byte range the file cannot satisfy.
    case rangeNotSatisfiable(size: Int64)
    /// The store or the agent failed.
    case storage(String)
    /// The origin answered a file with this error status (4xx, 5xx): the player gets the same status.
    case originStatus(Int)
    /// The origin could not be reached, timed out, or cut the file short: 503, so the player asks again.
    case originUnreachable(String)
    /// The account plays as many streams at once as it may (or the device may not stream): the reason's stable
    /// code and its text.
    case streamRefused(code: String, reason: String)
    /// The license demands more of the output than the app says it has.
    case outputNotAllowed(String)
    /// The audio track asked for at open is not among the content's (their names and languages follow).
    case noSuchAudioTrack(wanted: String, available: [String])

    public var httpStatus: Int {
        switch self {
        case .notFound, .unknownAsset: return 404
        case .notPlayable: return 403
        case .notLoopback: return 400
        case .invalidContent: return 502
        case .unsupportedProtection: return 415
        case .noKey: return 403
        case .notCached: return 503
        case .rangeNotSatisfiable: return 416
        case .storage: return 500
        case let .originStatus(status): return (400...599).contains(status) ? status : 502
        case .originUnreachable: return 503
        case .streamRefused: return 403
        case .outputNotAllowed: return 403
        case .noSuchAudioTrack: return 404
        }
    }

    /// A stable identifier: for `notPlayable`, the rights status itself.
    public var code: String {
        switch self {
        case .notFound: return "not-found"
        case let .notPlayable(status): return status.rawValue
        case .unknownAsset: return "unknown-asset"
        case .notLoopback: return "not-loopback"
        case .invalidContent: return "invalid-content"
        case .unsupportedProtection: return "unsupported-protection"
        case .noKey: return "no-key"
        case .notCached: return "not-cached"
        case .rangeNotSatisfiable: return "range-not-satisfiable"
        case .storage: return "storage"
        case .originStatus: return "origin-status"
        case .originUnreachable: return "origin-unreachable"
        case let .streamRefused(code, _): return code
        case .outputNotAllowed: return "output-not-allowed"
        case .noSuchAudioTrack: return "no-such-audio-track"
        }
    }

    public var description: String {
        switch self {
        case .notFound: return "no such session or file"
        case let .notPlayable(status): return "playback is not allowed: \(status.rawValue)"
        case let .unknownAsset(id): return "no downloaded asset \(id.prefix(100))"
        case let .notLoopback(host): return "the playback proxy binds to loopback only (127.0.0.1 or ::1), not \(host.prefix(60))"
        case let .invalidContent(reason): return "the content cannot be played: \(reason)"
        case let .unsupportedProtection(reason): return "unsupported-protection: \(reason)"
        case let .noKey(reason): return reason
        case let .notCached(path): return "\(path.prefix(200)) is not downloaded"
        case let .rangeNotSatisfiable(size): return "the range is outside the file (\(size) bytes)"
        case let .storage(reason): return "storage: \(reason)"
        case let .originStatus(status): return "the origin answered \(status)"
        case let .originUnreachable(reason): return reason
        case let .streamRefused(_, reason): return "no stream slot: \(reason)"
        case let .outputNotAllowed(reason): return "output-not-allowed: \(reason)"
        case let .noSuchAudioTrack(wanted, available):
            return "no audio track named \"\(wanted.prefix(100))\"" + (available.isEmpty ? " (the content lists none)" : "; it has \(available.joined(separator: ", "))")
        }
    }
}

extension PlaybackError {
    /// The proxy's error for the stream model's: content it cannot follow, transcribe or map.
    public init(_ error: StreamError) {
        self = .invalidContent(error.description)
    }
}
