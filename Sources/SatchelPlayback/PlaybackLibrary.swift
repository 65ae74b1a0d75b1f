import Foundation
import SatchelRights
import SatchelStreams
import SatchelSystem

/// Where one file of an asset is on its origin: a URL, or a byte range of it (`EXT-X-BYTERANGE`, DASH
/// `SegmentBase`).
public struct OriginFile: Sendable, Equatable {
    /// The absolute URL.
    public var url: String
    /// The bytes of `url` the file is, when it is not all of it.
    public var range: ClosedRange<Int64>?
    /// The size the manifest or a probe announced, when known (a filled file must have it).
    public var expectedSize: Int64?

    /// Creates an origin file.
    public init(url: String, range: ClosedRange<Int64>? = nil, expectedSize: Int64? = nil) {
        self.url = url
        self.range = range
        self.expectedSize = expectedSize ?? range.map { $0.upperBound - $0.lowerBound + 1 }
    }
}

/// How much of a downloaded asset is on disk (the cached content of a DRM agent, and the download's progress).
public struct CacheState: Sendable, Equatable {
    /// Seconds of media cached contiguously from the start (the smallest track wins).
    public var cachedDuration: Double
    /// The presentation's duration in seconds.
    public var totalDuration: Double
    /// True once enough is cached to start playing offline.
    public var isReadyToPlay: Bool

    /// Creates a cache state.
    public init(cachedDuration: Double, totalDuration: Double, isReadyToPlay: Bool) {
        self.cachedDuration = cachedDuration
        self.totalDuration = totalDuration
        self.isReadyToPlay = isReadyToPlay
    }
}

/// An asset the proxy may serve: its entry point, where its files are on disk, and where the ones that are not
/// can be fetched (a partly downloaded asset fills from the origin; an online source has nothing on disk).
public struct PlayableAsset: Sendable {
    /// The asset's folder, opened read-only by the library (nil: nothing on disk, every file comes from the origin):
    /// the proxy opens its files by name below it, no link followed.
    public var folder: ConfinedFolder?
    /// The entry point (master playlist, MPD, manifest or file), a path in the asset.
    public var entry: String
    /// Playlists held in memory, by path (an online source's playlists, rewritten to paths in the asset).
    public var manifests: [String: String]
    /// Where each file is on the origin, by path in the asset.
    public var origin: [String: OriginFile]
    /// Headers sent with every origin request (never logged).
    public var originHeaders: [String: String]
    /// Hands a file fetched whole from the origin to the store's owner (an asset being downloaded), which keeps it
    /// under its rules; nil: nothing is kept. Called with the file's path and its bytes as the origin sent them;
    /// answers why it was not kept (nil: kept).
    public var fill: (@Sendable (String, [UInt8]) async -> String?)?
    /// How much is cached, for a downloaded asset.
    public var cache: CacheState?
    /// The URL the entry was fetched from (an online source): its relative references resolve against it.
    public var sourceURL: URL?
    /// Fetches the entry again (an online DASH source whose MPD is dynamic); nil: it does not change.
    public var reloadEntry: (@Sendable () async throws(PlaybackError) -> String)?
    /// The asset ID the license server knows the content by, when it is not the asset's own (a download added with
    /// `--license-asset`): its rights are the session's.
    public var licenseAsset: String?
    /// True when the entry is a media file played as one byte stream (an MP4, a PIFF `.ismv`), not a manifest.
    public var isSingleFile = false
    /// For a single file being downloaded: keeps bytes fetched from the origin for the player at an offset of the
    /// file (with the file's total length, when the origin said it) — appended to its partial download
    /// (`<file>.part`) when they continue it. Nil: nothing is kept.
    public var extendPart: (@Sendable (String, Int64, [UInt8], Int64?) async -> Void)?
    /// Called once per session, when it first sends media (a GET of a segment, a key or the file; never a HEAD, a
    /// playlist or an inspection): a download's expire-after-play window starts there, and only there.
    public var onFirstPlay: (@Sendable () async throws(PlaybackError) -> Void)?

    /// Creates a playable asset.
    public init(folder: ConfinedFolder?, entry: String, manifests: [String: String] = [:], origin: [String: OriginFile] = [:],
                originHeaders: [String: String] = [:], fill: (@Sendable (String, [UInt8]) async -> String?)? = nil, cache: CacheState? = nil,
                sourceURL: URL? = nil, reloadEntry: (@Sendable () async throws(PlaybackError) -> String)? = nil) {
        self.folder = folder
        self.entry = entry
        self.manifests = manifests
        self.origin = origin
        self.originHeaders = originHeaders
        self.fill = fill
        self.cache = cache
        self.sourceURL = sourceURL
        self.reloadEntry = reloadEntry
    }

    /// The same over the folder at `path`, opened now (nil when it is not there; a link in its place is refused).
    package init(path: String?, entry: String, manifests: [String: String] = [:], origin: [String: OriginFile] = [:]) {
        self.init(folder: path.flatMap { try? ConfinedFolder.openIfPresent($0) }, entry: entry, manifests: manifests, origin: origin)
    }

    /// `file` opened from disk when it is there (nil when it is not): below the asset's folder, no symbolic link
    /// followed on the way — not a folder inside it, not the file (a link planted anywhere is refused as if nothing
    /// were there to serve).
    func openLocal(_ file: String) throws(PlaybackError) -> ConfinedFile? {
        guard let folder else { return nil }
        do {
            return try folder.openIfPresent(file)
        } catch {
            switch error {
            case .missing: return nil
            case .link, .notRegular, .escapes: throw .notFound
            case let .system(code): throw .storage("cannot open \(file): \(String(cString: strerror(code)))")
            }
        }
    }

    /// True when `file` is on disk (a regular file reached without following a link).
    func isLocal(_ file: String) -> Bool {
        (try? openLocal(file)) != nil
    }
}

/// Where the proxy finds the assets it serves (seam: the download engine, an online source; anything that can
/// answer the same).
public protocol PlaybackLibrary: Sendable {
    /// The asset, if its availability window allows playback now; registers its first play (which starts
    /// the expiry after play).
    func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset
}
