import SatchelBytes

/// Why an asset cannot be enqueued or an engine call cannot be done. Cases say what to do.
public enum DownloadError: ProblemConvertible, Equatable {
    /// A stable identifier per case.
    public var code: String {
        switch self {
        case .liveStream: return "live-stream"
        case .unknownFormat: return "unknown-format"
        case .malformedManifest: return "malformed-manifest"
        case .nothingSelected: return "nothing-selected"
        case .mimeNotPermitted: return "mime-not-permitted"
        case .fetch: return "manifest-fetch"
        case .unsafeResource: return "unsafe-resource"
        case .duplicateID: return "duplicate-id"
        case .queueFull: return "queue-full"
        case .notFound: return "not-found"
        case .expired: return "expired"
        case .invalidArgument: return "invalid-argument"
        case .storage: return "storage"
        }
    }

    /// 404 for an unknown asset, 409 for a duplicate or a full queue, 410 for an expired one, 502 when the origin failed,
    /// 500 for storage, else 400 (the request names something that cannot be downloaded).
    public var httpStatus: Int {
        switch self {
        case .notFound: return 404
        case .duplicateID, .queueFull: return 409
        case .expired: return 410
        case .fetch: return 502
        case .storage: return 500
        default: return 400
        }
    }

    /// Live streams cannot be downloaded to go.
    case liveStream(String)
    /// The URL is text but not an HLS, DASH or Smooth manifest.
    case unknownFormat(String)
    /// The manifest is malformed.
    case malformedManifest(String)
    /// Nothing in the manifest fits the selection.
    case nothingSelected(String)
    /// A single file's MIME type is not in the permitted list.
    case mimeNotPermitted(url: String, mimeType: String)
    /// The manifest could not be fetched.
    case fetch(DownloadFailure)
    /// The manifest names a resource that cannot be stored safely (its path would leave the asset's folder).
    case unsafeResource(DownloadFailure)
    /// An asset with this ID is already in the index.
    case duplicateID(String)
    /// The queue holds its most assets (``DownloadManager/Configuration/maximumAssets``): none is added until some are removed.
    case queueFull(Int)
    /// No asset with this ID.
    case notFound(String)
    /// The asset's availability window has closed (its files are deleted).
    case expired(String)
    /// A bad argument (an ID or a URL).
    case invalidArgument(String)
    /// The index (SQLite) or the asset directory failed.
    case storage(String)

    public var description: String {
        switch self {
        case let .liveStream(url): return "\(url) is a live stream (no EXT-X-ENDLIST / dynamic MPD / IsLive); only on-demand assets can be downloaded"
        case let .unknownFormat(url): return "\(url) is neither a media file nor an HLS, DASH or Smooth Streaming manifest"
        case let .malformedManifest(reason): return "malformed manifest: \(reason)"
        case let .nothingSelected(reason): return "nothing to download: \(reason)"
        case let .mimeNotPermitted(url, type): return "\(url) has MIME type \(type), which is not permitted"
        case let .fetch(failure): return "cannot fetch the manifest: \(failure)"
        case let .unsafeResource(failure): return "refused: \(failure)"
        case let .duplicateID(id): return "an asset with ID \(id) is already queued (remove it first)"
        case let .queueFull(limit): return "the download queue already holds \(limit) assets, the most it keeps: remove finished or unwanted ones, then add again"
        case let .notFound(id): return "no asset with ID \(id)"
        case let .expired(id): return "asset \(id) has expired; its files were deleted"
        case let .invalidArgument(reason): return reason
        case let .storage(reason): return "storage: \(reason)"
        }
    }
}

/// Why one download attempt stopped. Every failure is typed; ``isFatal`` ones are not retried and
/// ``isRuleLimit`` ones are not errors at all: the asset waits until the rule allows it.
public enum DownloadFailure: ProblemConvertible, Equatable, Codable {
    /// A stable identifier per case (events and `download list` show it).
    public var code: String {
        switch self {
        case .network: return "network"
        case .httpStatus: return "http-status"
        case .invalidContent: return "invalid-content"
        case .mimeType: return "mime-type"
        case .diskFull: return "disk-full"
        case .fileSystem: return "file-system"
        case .license: return "license"
        case .cancelled: return "cancelled"
        case .storageLimit: return "storage-limit"
        case .headroom: return "headroom"
        case .doesNotFit: return "does-not-fit"
        case .maxDownloadedAssets: return "max-downloaded-assets"
        case .networkUnavailable: return "network-unavailable"
        case .permissionRefused: return "permission-refused"
        case .permissionPending: return "permission-pending"
        case .privateOrigin: return "private-origin"
        }
    }

    /// The connection failed, was reset, timed out or ended early.
    case network(url: String, message: String)
    /// The origin answered with an HTTP error status.
    case httpStatus(url: String, status: Int)
    /// The response is not what the file should be (an HTML page for a segment, a wrong range, a short key).
    case invalidContent(url: String, reason: String)
    /// The Content-Type is not permitted for this file.
    case mimeType(url: String, mimeType: String)
    /// The disk is full.
    case diskFull(path: String)
    /// Another file-system error.
    case fileSystem(path: String, message: String)
    /// A license could not be obtained: the license server's problem type, its detail, and whether trying
    /// again later may help (the server failed or could not be reached).
    case license(problem: String, detail: String, retryable: Bool)
    /// The download was cancelled (paused, removed, disabled or the engine stopped).
    case cancelled
    /// The rule `maxStorageAllowed` would be crossed.
    case storageLimit(usedBytes: Int64, limit: Int64)
    /// The rule `headroom` would be crossed.
    case headroom(freeBytes: Int64, headroom: Int64)
    /// The asset, whole, would cross `maxStorageAllowed` or the headroom (checked before it starts): it
    /// needs `neededBytes`, the rules leave `availableBytes`.
    case doesNotFit(neededBytes: Int64, availableBytes: Int64)
    /// The rule `maxDownloadedAssets` is reached.
    case maxDownloadedAssets(Int)
    /// Only a metered (cellular) network is available and `downloadOverCellular` is off, or there is no network, or
    /// its type is unknown and the rules deny that.
    case networkUnavailable(NetworkType)
    /// The backplane refused the download: its reason's stable code (`device-not-enabled`, `device-asset-limit`,
    /// `account-download-limit`, `asset-not-downloadable`, `device-killed`) and text.
    case permissionRefused(reason: String, detail: String)
    /// The backplane could not be asked (the permission is pending): the asset waits and downloads nothing.
    case permissionPending(String)
    /// The asset's ``OriginPolicy`` is `publicOnly` (a feed's item) and the URL, or a redirect, names a private,
    /// loopback or link-local address (or a host resolving to one).
    case privateOrigin(url: String, address: String)

    /// True when retrying cannot help. One such condition is a MIME type outside the permitted
    /// list. Every HTTP error is retried under the Rule of Threes (a 404 may be a CDN that has not got the
    /// file yet; a 401 or 403 may heal when the application hands the engine a fresh URL or token).
    public var isFatal: Bool {
        switch self {
        case .mimeType: return true
        case let .license(_, _, retryable): return !retryable  // the license server said no: asking again says no again
        case .permissionRefused, .privateOrigin: return true
        default: return false
        }
    }

    /// True for 401 and 403: the origin wants fresh credentials (``DownloadEvent/authorizationRequired(assetID:status:)``).
    public var needsAuthorization: Bool {
        if case let .httpStatus(_, status) = self { return status == 401 || status == 403 }
        return false
    }

    /// True for the rules (storage, headroom, asset count, network type): the asset waits, no retry is counted.
    public var isRuleLimit: Bool {
        switch self {
        case .storageLimit, .headroom, .doesNotFit, .maxDownloadedAssets, .networkUnavailable, .permissionPending: return true
        default: return false
        }
    }

    /// Text for people and logs; query strings (which often carry tokens) are left out.
    public var description: String {
        switch self {
        case let .network(url, message): return "network error for \(Self.redacted(url)): \(message)"
        case let .httpStatus(url, status): return "HTTP \(status) for \(Self.redacted(url))"
        case let .invalidContent(url, reason): return "invalid content from \(Self.redacted(url)): \(reason)"
        case let .mimeType(url, type): return "\(Self.redacted(url)) has MIME type \(type), which is not permitted"
        case let .diskFull(path): return "disk full writing \(path)"
        case let .fileSystem(path, message): return "cannot write \(path): \(message)"
        case let .license(problem, detail, _): return "license (\(problem)): \(detail)"
        case .cancelled: return "cancelled"
        case let .storageLimit(used, limit): return "maxStorageAllowed reached (\(used) of \(limit) bytes used)"
        case let .headroom(free, headroom): return "headroom reached (\(free) bytes free, \(headroom) must stay free)"
        case let .doesNotFit(needed, available):
            return "the asset does not fit: it needs \(needed) bytes and maxStorageAllowed and the headroom leave \(available)"
        case let .maxDownloadedAssets(max): return "maxDownloadedAssets reached (\(max) assets downloaded)"
        case let .networkUnavailable(type):
            switch type {
            case .none: return "no network"
            case .unknown: return "the network's type cannot be detected and metered-unknown is deny"
            default: return "only a metered (cellular) network and downloadOverCellular is off"
            }
        case let .permissionRefused(reason, detail): return "download permission refused (\(reason)): \(detail)"
        case let .permissionPending(why): return "waiting for the backplane's download permission: \(why)"
        case let .privateOrigin(url, address):
            return "\(Self.redacted(url)) is on a private address (\(address)): a feed's items are fetched from public addresses only, unless the operator allows private origins (satchel backplane settings set --allow-private-feed-origins true)"
        }
    }

    /// `url` without its query string.
    static func redacted(_ url: String) -> String {
        guard let query = url.firstIndex(of: "?") else { return url }
        return url[..<query] + "?…"
    }
}
