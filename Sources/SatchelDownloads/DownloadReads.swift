import Foundation
import SatchelStreams

/// What apps and the playback proxy read of the engine — assets, progress, local paths, first plays — and the door
/// through which the proxy's files from the origin reach the store. An asset touched after its window closed has
/// its files deleted there and then ("when a caller tries to access an expired item via the API, any
/// downloaded files associated with that item will be auto-deleted"), whether or not the engine is running.
enum DownloadReads {
    static func assets(_ engine: isolated DownloadManager, availabilityFilter: Bool) async throws(DownloadError) -> [DownloadAsset] {
        var stored = try await engine.index.all()
        if try await expireTouched(engine, stored) { stored = try await engine.index.all() }
        let now = engine.environment.clock.now
        var assets: [DownloadAsset] = []
        for asset in stored {
            let shown = QueuePolicy.presented(asset, at: now)
            guard !availabilityFilter || (shown.state != .expired && shown.window.isPublished(at: now)) else { continue }
            assets.append(try withPlan(engine, shown))
        }
        return assets
    }

    static func asset(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) -> DownloadAsset {
        guard var asset = try await engine.index.find(id) else { throw .notFound(id) }
        if try await expireTouched(engine, [asset]), let expired = try await engine.index.find(id) { asset = expired }
        return try withPlan(engine, QueuePolicy.presented(asset, at: engine.environment.clock.now))
    }

    /// Expires the assets of `touched` whose window has closed (their files deleted now); true when any was.
    private static func expireTouched(_ engine: isolated DownloadManager, _ touched: [DownloadAsset]) async throws(DownloadError) -> Bool {
        let now = engine.environment.clock.now
        let due = touched.filter { QueuePolicy.hasExpired($0, at: now) && !engine.removing.contains($0.id) }.map(\.id)
        guard !due.isEmpty else { return false }
        return try await !DownloadQueue.expire(engine, due).isEmpty
    }

    /// The asset with its plan, read from its folder (the index holds metadata only).
    static func withPlan(_ engine: isolated DownloadManager, _ asset: DownloadAsset) throws(DownloadError) -> DownloadAsset {
        guard asset.plan.isPlaceholder else { return asset }
        var full = asset
        do {
            if let plan = try engine.store.readPlan(asset.id) { full.plan = plan }
        } catch {
            throw .storage("asset \(asset.id): \(error.description)")
        }
        return full
    }

    static func progress(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) -> DownloadProgress {
        let asset = try await asset(engine, id)
        let scan = engine.store.scan(id, plan: asset.plan)
        return DownloadProgress(assetID: id, plan: asset.plan, complete: scan.complete, bytes: scan.bytes,
                                readyDuration: engine.configuration.readyDuration)
    }

    static func registerPlayStart(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) {
        var asset = try await playable(engine, id)
        if asset.firstPlayAt == nil {
            asset.firstPlayAt = engine.environment.clock.now
            try await engine.index.update(asset)
        }
    }

    /// The asset, if it may be played now: not expired, published.
    static func playable(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) -> DownloadAsset {
        let asset = try await asset(engine, id)
        guard asset.state != .expired else { throw .expired(id) }
        guard asset.window.isPublished(at: engine.environment.clock.now) else { throw .notFound(id) }
        return asset
    }

    static func extendPart(_ engine: isolated DownloadManager, _ id: String, path: String, offset: Int64, bytes: [UInt8],
                           total: Int64?) async throws(DownloadError) {
        // The engine downloading this asset now writes its part itself.
        guard engine.current?.id != id, !engine.removing.contains(id), let found = try await engine.index.find(id) else { return }
        guard found.state != .expired, found.state != .complete, !QueuePolicy.hasExpired(found, at: engine.environment.clock.now) else { return }
        let root = engine.store.root, environment = engine.environment
        let budget = DownloadBudget(used: DownloadRunLoop.currentUsage(engine), rules: engine.configuration.rules,
                                    freeSpace: { environment.freeSpace(root) })
        do throws(DownloadFailure) {
            try budget.reserve(Int64(bytes.count))
            guard try engine.store.extendPart(id, path: path, offset: offset, bytes: bytes, total: total) else { return }
        } catch {
            throw .storage("\(path) of \(id) was not kept: \(error.description)")
        }
        engine.usedBytes = budget.usedBytes
        engine.emit(.fileKept(assetID: id, path: path, bytes: bytes.count))
    }

    static func keepFetched(_ engine: isolated DownloadManager, _ id: String, path: String, bytes: [UInt8]) async throws(DownloadError) {
        guard !engine.removing.contains(id), let found = try await engine.index.find(id) else { throw .notFound(id) }
        guard found.state != .expired, !QueuePolicy.hasExpired(found, at: engine.environment.clock.now) else { throw .expired(id) }
        guard found.state != .complete else { return }
        let asset = try withPlan(engine, found)
        guard asset.plan.resources.contains(where: { $0.localPath == path }) else {
            throw .invalidArgument("\(path) is not a file of asset \(id)")
        }
        let root = engine.store.root, environment = engine.environment
        let budget = DownloadBudget(used: DownloadRunLoop.currentUsage(engine), rules: engine.configuration.rules,
                                    freeSpace: { environment.freeSpace(root) })
        let kept: Bool
        do throws(DownloadFailure) {
            try budget.reserve(Int64(bytes.count))
            kept = try engine.store.keepFetched(id, path: path, bytes: bytes)
        } catch {
            throw .storage("\(path) of \(id) was not kept: \(error.description)")
        }
        guard kept else { return }  // the download wrote it meanwhile
        engine.usedBytes = budget.usedBytes
        engine.emit(.fileKept(assetID: id, path: path, bytes: bytes.count))
    }
}
