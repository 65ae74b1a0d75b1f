import Foundation
import SatchelStreams

/// What apps and the playback proxy read of the engine — assets, progress, local paths, first plays — and the door
/// through which the proxy's files from the origin reach the store. An asset touched after its window closed has
/// its files deleted there and then ("when a caller tries to access an expired item via the API, any
/// downloaded files associated with that item will be auto-deleted"), whether or not the engine is running.
/// It holds no state of its own: the queue says what is being removed, the attempt slot what is being downloaded.
final class DownloadReads {
    private let parts: EngineParts
    private let reporter: EngineReporter
    private let queue: DownloadQueue
    private let attempt: AttemptSlot
    private let usage: StorageUsage

    init(parts: EngineParts, reporter: EngineReporter, queue: DownloadQueue, attempt: AttemptSlot, usage: StorageUsage) {
        self.parts = parts
        self.reporter = reporter
        self.queue = queue
        self.attempt = attempt
        self.usage = usage
    }

    nonisolated(nonsending) func assets(availabilityFilter: Bool) async throws(DownloadError) -> [DownloadAsset] {
        var stored = try await parts.index.all()
        if try await expireTouched(stored) { stored = try await parts.index.all() }
        let now = parts.now
        var assets: [DownloadAsset] = []
        for asset in stored {
            let shown = QueuePolicy.presented(asset, at: now)
            guard !availabilityFilter || (shown.state != .expired && shown.window.isPublished(at: now)) else { continue }
            assets.append(try withPlan(shown))
        }
        return assets
    }

    nonisolated(nonsending) func asset(_ id: String) async throws(DownloadError) -> DownloadAsset {
        guard var asset = try await parts.index.find(id) else { throw .notFound(id) }
        if try await expireTouched([asset]), let expired = try await parts.index.find(id) { asset = expired }
        return try withPlan(QueuePolicy.presented(asset, at: parts.now))
    }

    /// Expires the assets of `touched` whose window has closed (their files deleted now); true when any was.
    private nonisolated(nonsending) func expireTouched(_ touched: [DownloadAsset]) async throws(DownloadError) -> Bool {
        let now = parts.now
        let due = touched.filter { QueuePolicy.hasExpired($0, at: now) && !queue.isRemoving($0.id) }.map(\.id)
        guard !due.isEmpty else { return false }
        return try await !queue.expire(due).isEmpty
    }

    /// The asset with its plan, read from its folder (the index holds metadata only).
    func withPlan(_ asset: DownloadAsset) throws(DownloadError) -> DownloadAsset {
        guard asset.plan.isPlaceholder else { return asset }
        var full = asset
        do {
            if let plan = try parts.store.readPlan(asset.id) { full.plan = plan }
        } catch {
            throw .storage("asset \(asset.id): \(error.description)")
        }
        return full
    }

    nonisolated(nonsending) func progress(_ id: String) async throws(DownloadError) -> DownloadProgress {
        let asset = try await asset(id)
        let scan = parts.store.scan(id, plan: asset.plan)
        return DownloadProgress(assetID: id, plan: asset.plan, complete: scan.complete, bytes: scan.bytes,
                                readyDuration: parts.configuration.readyDuration)
    }

    nonisolated(nonsending) func registerPlayStart(_ id: String) async throws(DownloadError) {
        var asset = try await playable(id)
        if asset.firstPlayAt == nil {
            asset.firstPlayAt = parts.now
            try await parts.index.update(asset)
        }
    }

    /// The asset, if it may be played now: not expired, published.
    nonisolated(nonsending) func playable(_ id: String) async throws(DownloadError) -> DownloadAsset {
        let asset = try await asset(id)
        guard asset.state != .expired else { throw .expired(id) }
        guard asset.window.isPublished(at: parts.now) else { throw .notFound(id) }
        return asset
    }

    nonisolated(nonsending) func extendPart(_ id: String, path: String, offset: Int64, bytes: [UInt8],
                           total: Int64?) async throws(DownloadError) {
        // The engine downloading this asset now writes its part itself.
        guard attempt.assetID != id, !queue.isRemoving(id), let found = try await parts.index.find(id) else { return }
        guard found.state != .expired, found.state != .complete, !QueuePolicy.hasExpired(found, at: parts.now) else { return }
        let budget = usage.budget()
        do throws(DownloadFailure) {
            try budget.reserve(Int64(bytes.count))
            guard try parts.store.extendPart(id, path: path, offset: offset, bytes: bytes, total: total) else { return }
        } catch {
            throw .storage("\(path) of \(id) was not kept: \(error.description)")
        }
        usage.settle(budget)
        reporter.emit(.fileKept(assetID: id, path: path, bytes: bytes.count))
    }

    nonisolated(nonsending) func keepFetched(_ id: String, path: String, bytes: [UInt8]) async throws(DownloadError) {
        guard !queue.isRemoving(id), let found = try await parts.index.find(id) else { throw .notFound(id) }
        guard found.state != .expired, !QueuePolicy.hasExpired(found, at: parts.now) else { throw .expired(id) }
        guard found.state != .complete else { return }
        let asset = try withPlan(found)
        guard asset.plan.resources.contains(where: { $0.localPath == path }) else {
            throw .invalidArgument("\(path) is not a file of asset \(id)")
        }
        let budget = usage.budget()
        let kept: Bool
        do throws(DownloadFailure) {
            try budget.reserve(Int64(bytes.count))
            kept = try parts.store.keepFetched(id, path: path, bytes: bytes)
        } catch {
            throw .storage("\(path) of \(id) was not kept: \(error.description)")
        }
        guard kept else { return }  // the download wrote it meanwhile
        usage.settle(budget)
        reporter.emit(.fileKept(assetID: id, path: path, bytes: bytes.count))
    }
}
