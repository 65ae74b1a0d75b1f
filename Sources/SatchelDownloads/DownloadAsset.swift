import Foundation
import SatchelStreams
import SatchelRights

/// Where an asset is in its life.
public enum DownloadState: String, Sendable, Codable {
    /// Waiting its turn (or errored in this pass and to be tried again in the next).
    case queued
    /// Being downloaded now (or was, when the process stopped: it resumes).
    case downloading
    /// A rule holds it (storage, headroom, asset count, network); it resumes when the rule allows.
    case waiting
    /// Every file is on disk.
    case complete
    /// Errored in three passes, or fatally; tried again only after `clearRetryCount`.
    case blocked
    /// Its availability window closed; its files were deleted.
    case expired
}

/// The availability window, in the one rights model of `SatchelRights`: the publish date is the
/// rights' start, the expiry date their end, the expiry after download a validity counted from the moment the
/// download completed (as a rental counts from acquisition), the expiry after play the playback window.
public struct AvailabilityWindow: Sendable, Codable, Equatable {
    /// Hidden from availability-filtered queries until then (it downloads anyway).
    public var publishDate: Date?
    /// Deleted from this date on.
    public var expiryDate: Date?
    /// Deleted this many seconds after the download completes.
    public var expiryAfterDownload: UInt32?
    /// Deleted this many seconds after the first play.
    public var expiryAfterPlay: UInt32?

    /// Creates a window (all open by default).
    public init(publishDate: Date? = nil, expiryDate: Date? = nil, expiryAfterDownload: UInt32? = nil, expiryAfterPlay: UInt32? = nil) {
        self.publishDate = publishDate
        self.expiryDate = expiryDate
        self.expiryAfterDownload = expiryAfterDownload
        self.expiryAfterPlay = expiryAfterPlay
    }

    /// The window as rights (persistent: a downloaded asset is kept offline).
    public var rights: Rights {
        Rights(start: publishDate, end: expiryDate, validitySeconds: expiryAfterDownload, playbackSeconds: expiryAfterPlay, persistent: true)
    }

    /// The window's status at `now` for an asset that completed and was first played at these dates (nil:
    /// not yet): `inFuture` before the publish date, `expired` once any expiry has passed, else `valid`.
    /// The expiry after download counts only once the download has completed.
    public func evaluate(completedAt: Date?, firstPlayAt: Date?, at now: Date) -> RightsEvaluation {
        let (rights, usage) = rightsAndUsage(completedAt: completedAt, firstPlayAt: firstPlayAt)
        return rights.evaluate(usage, at: now)
    }

    /// The moment the asset expires, given when it finished downloading and was first played (nil = never).
    public func expiry(completedAt: Date?, firstPlayAt: Date?) -> Date? {
        let (rights, usage) = rightsAndUsage(completedAt: completedAt, firstPlayAt: firstPlayAt)
        return rights.effectiveEnd(usage)
    }

    /// True when the asset may be shown at `now` (published).
    public func isPublished(at now: Date) -> Bool { DateWindow(start: publishDate, end: expiryDate).hasStarted(at: now) }

    private func rightsAndUsage(completedAt: Date?, firstPlayAt: Date?) -> (Rights, RightsUsage) {
        var rights = rights
        if completedAt == nil { rights.validitySeconds = nil }
        return (rights, RightsUsage(acquired: completedAt ?? .distantPast, firstUse: firstPlayAt))
    }

    enum CodingKeys: String, CodingKey { case publishDate, expiryDate, expiryAfterDownload, expiryAfterPlay }

    /// Decodes a window; durations written as fractional seconds (before windows were rights) round up.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        publishDate = try container.decodeIfPresent(Date.self, forKey: .publishDate)
        expiryDate = try container.decodeIfPresent(Date.self, forKey: .expiryDate)
        func seconds(_ key: CodingKeys) throws -> UInt32? {
            if let whole = try? container.decodeIfPresent(UInt32.self, forKey: key) { return whole }
            guard let value = try container.decodeIfPresent(Double.self, forKey: key) else { return nil }
            guard value.isFinite else { return UInt32.max }
            return UInt32(min(max(value.rounded(.up), 0), Double(UInt32.max)))
        }
        expiryAfterDownload = try seconds(.expiryAfterDownload)
        expiryAfterPlay = try seconds(.expiryAfterPlay)
    }
}

/// One asset in the engine, as the index holds it.
public struct DownloadAsset: Sendable, Codable, Equatable {
    /// The asset's ID (its directory name).
    public var id: String
    /// The URL it was enqueued with.
    public var url: String
    /// Where it is in its life.
    public var state: DownloadState
    /// Paused by the user: not downloaded until resumed.
    public var isPaused: Bool
    /// The last failure or the rule holding it.
    public var failure: DownloadFailure?
    /// Passes through the queue in which it errored (3 = blocked).
    public var retryCount: Int
    /// Its availability window.
    public var window: AvailabilityWindow
    /// What was asked for.
    public var options: DownloadOptions
    /// What to fetch.
    public var plan: DownloadPlan
    /// When it was enqueued.
    public var addedAt: Date
    /// When its download completed.
    public var completedAt: Date?
    /// When it was first played.
    public var firstPlayAt: Date?
    /// Position in the queue.
    public var position: Int
    /// The bytes its plan will fetch, when every file's size was known when it was planned (the index keeps this
    /// beside a light plan: the queue's rules read it without the plan).
    public var plannedBytes: Int64? = nil
}

/// Progress of one asset: bytes, a fraction, and the durations.
public struct DownloadProgress: Sendable, Codable, Equatable {
    /// The asset.
    public var assetID: String
    /// Bytes on disk (complete and partial files).
    public var bytes: Int64
    /// Total bytes, when every size is known in advance.
    public var expectedBytes: Int64?
    /// Files complete.
    public var completedFiles: Int
    /// Files in the plan.
    public var totalFiles: Int
    /// 0…1: exact by bytes when sizes are known, else by files.
    public var fraction: Double
    /// The presentation's duration in seconds.
    public var totalDuration: Double
    /// Seconds available contiguously from the start.
    public var cachedDuration: Double
    /// Enough is on disk to start playing offline: manifests, init segments and keys, and the first
    /// `readyDuration` seconds (or all of a shorter asset).
    public var isReadyToPlay: Bool

    /// Computes progress from which files are complete and the bytes on disk.
    public init(assetID: String, plan: DownloadPlan, complete: [Bool], bytes: Int64, readyDuration: Double) {
        self.assetID = assetID
        self.bytes = bytes
        expectedBytes = plan.expectedBytes.map(Int64.init)
        completedFiles = complete.lazy.filter { $0 }.count
        totalFiles = plan.resources.count
        if completedFiles == totalFiles {
            fraction = 1
        } else if let expected = expectedBytes, expected > 0 {
            fraction = min(Double(bytes) / Double(expected), 1)
        } else {
            fraction = totalFiles == 0 ? 1 : Double(completedFiles) / Double(totalFiles)
        }
        totalDuration = plan.mediaDuration
        cachedDuration = min(plan.cachedDuration { complete[$0] }, totalDuration)
        let essentials = plan.resources.indices.allSatisfy { plan.resources[$0].kind == .segment || complete[$0] }
        isReadyToPlay = essentials && (completedFiles == totalFiles || (cachedDuration > 0 && cachedDuration >= min(readyDuration, totalDuration)))
    }
}

/// What the engine reports (the notifications).
public enum DownloadEvent: Sendable, Equatable {
    /// The engine's status changed.
    case engineStatusChanged(EngineStatus)
    /// An asset was added to the queue.
    case added(assetID: String)
    /// An asset was removed (its files and record deleted).
    case removed(assetID: String)
    /// An asset's retry count was cleared (a blocked asset is queued again).
    case retriesCleared(assetID: String)
    /// An asset's state changed.
    case stateChanged(assetID: String, state: DownloadState)
    /// An asset's download started (or resumed).
    case started(assetID: String)
    /// Progress of the asset being downloaded.
    case progress(DownloadProgress)
    /// The phase after an asset's files are all fetched (its steps' work: the license renewed, …), `fraction` of it
    /// done: 0 as it begins, 1 before ``finished(assetID:)`` (the processing progress).
    case processing(assetID: String, fraction: Double)
    /// An asset finished downloading.
    case finished(assetID: String)
    /// An attempt failed; `willRetry` says whether the engine will try again without being asked.
    case error(assetID: String, failure: DownloadFailure, willRetry: Bool)
    /// Something unexpected that did not stop the download (a size the manifest declared that the origin contradicts).
    case warning(assetID: String, message: String)
    /// The origin answered 401 or 403 for a file of the asset: hand the engine a fresh URL or token with
    /// ``DownloadManager/updateURL(_:url:headers:)`` (the asset keeps its bytes and resumes).
    case authorizationRequired(assetID: String, status: Int)
    /// The index holds a record for this asset that cannot be read: it is listed as damaged and its files stay.
    case damaged(assetID: String, reason: String)
    /// The engine began upgrading a data store written by an earlier version; assets already
    /// downloaded stay playable throughout.
    case dataStoreUpgradeBegan
    /// The upgrade finished; `upgraded` records were moved to the current layout.
    case dataStoreUpgradeFinished(upgraded: Int)
    /// Assets were added, removed, paused, resumed or reordered.
    case queueChanged
    /// Assets whose window closed were deleted from disk.
    case expiredAssetsReset([String])
    /// The index could not be read or written; the run stopped (nothing is retried unrecorded).
    case storageFailed(String)
    /// A file the playback proxy fetched whole from the origin while the asset plays was kept in the store (download and
    /// play): the download need not fetch it again.
    case fileKept(assetID: String, path: String, bytes: Int)
}

/// What the engine as a whole is doing.
public enum EngineStatus: Sendable, Equatable {
    /// Nothing to do.
    case idle
    /// Downloading an asset.
    case downloading(String)
    /// Downloads are switched off (`enabled` is false).
    case disabled
}
