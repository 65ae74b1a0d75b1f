import Foundation
import SatchelStreams

/// The engine's queue and every change to it: the index rows and the files they own (add, pause, resume, remove,
/// the global switch, expiry). Runs on the engine's isolation: the run loop never sees half a change.
enum DownloadQueue {
    static func add(_ engine: isolated DownloadManager, url: String, id: String?, options: DownloadOptions,
                    window: AvailabilityWindow, paused: Bool) async throws(DownloadError) -> DownloadAsset {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme), parsed.host != nil else {
            throw .invalidArgument("not an http(s) URL: \(url)")
        }
        let limit = min(engine.configuration.maximumAssets, DownloadIndex.recordLimit)
        guard try await engine.index.count() < limit else { throw .queueFull(limit) }
        var named = id
        if named == nil {
            // A readable ID from the URL (its playlist's or folder's name), unique among the assets.
            let existing = Set(try await engine.index.all().map(\.id) + (try await engine.index.damaged()).map(\.id))
            named = DownloadNaming.id(for: parsed, taken: existing.contains)
        }
        guard let id = named else { throw .invalidArgument("no asset ID") }
        guard AssetStore.isValidID(id) else { throw .invalidArgument("asset IDs are 1-128 of A-Z a-z 0-9 . _ - (got \(id))") }
        guard try await engine.index.find(id) == nil else { throw .duplicateID(id) }
        guard try await !engine.index.damaged().contains(where: { $0.id == id }) else { throw .duplicateID(id) }
        let plan: DownloadPlan
        do {
            let (headers, origins) = (options.headers ?? [:], options.origins ?? .any)
            let probe = try await engine.fetcher.probe(parsed, headers: headers, origins: origins)
            let fetcher = engine.fetcher
            plan = try await DownloadPlanner.plan(probe: probe, options: options.planOptions) { url in
                try await fetcher.text(url, headers: headers, origins: origins)
            }
        } catch let error as DownloadError {
            throw error
        } catch let error as StreamError {
            throw DownloadError(error)
        } catch let failure as DownloadFailure {
            throw .fetch(failure)
        } catch {
            throw .fetch(.network(url: url, message: String(describing: error)))
        }
        let asset = DownloadAsset(id: id, url: url, state: .queued, isPaused: paused, failure: nil, retryCount: 0, window: window,
                                  options: options, plan: plan, addedAt: engine.environment.clock.now, completedAt: nil, firstPlayAt: nil,
                                  position: try await engine.index.nextPosition(), plannedBytes: plan.expectedBytes.map(Int64.init))
        // The plan goes into the asset's folder first (crash-safe); the index row that makes the asset exist follows.
        do { try engine.store.writePlan(id, plan) } catch { throw .storage(error.description) }
        do {
            try await engine.index.save(asset)
        } catch {
            try? engine.store.delete(id, keepingPlan: false)  // the row was never written: nothing may stay behind
            throw error
        }
        engine.emit(.queueChanged)
        engine.emit(.added(assetID: id))
        engine.emit(.stateChanged(assetID: id, state: .queued))
        engine.wake()
        return asset
    }

    static func pause(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) {
        try await update(engine, id) { $0.isPaused = true }
        await stopCurrent(engine, ifItIs: id)
        engine.emit(.queueChanged)
    }

    static func resume(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) {
        try await update(engine, id) { $0.isPaused = false }
        engine.emit(.queueChanged)
        engine.wake()
    }

    static func clearRetryCount(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) {
        try await update(engine, id) { asset in
            asset.retryCount = 0
            if asset.state == .blocked {
                asset.state = .queued
                asset.failure = nil
            }
        }
        engine.emit(.retriesCleared(assetID: id))
        engine.emit(.queueChanged)
        engine.wake()
    }

    static func remove(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) {
        let found = try await engine.index.find(id)
        if found == nil {
            guard try await engine.index.damaged().contains(where: { $0.id == id }) else { throw .notFound(id) }
        }
        engine.removing.insert(id)
        defer { engine.removing.remove(id) }
        await stopCurrent(engine, ifItIs: id)
        do { try engine.store.delete(id, keepingPlan: false) } catch { throw .storage(error.description) }
        try await engine.index.delete(id)
        if let found { for step in engine.steps { await step.removed(found) } }
        engine.usedBytes = nil
        engine.emit(.removed(assetID: id))
        engine.emit(.queueChanged)
    }

    static func reset(_ engine: isolated DownloadManager, _ id: String) async throws(DownloadError) {
        guard var asset = try await engine.index.find(id) else { throw .notFound(id) }
        engine.removing.insert(id)
        defer { engine.removing.remove(id) }
        await stopCurrent(engine, ifItIs: id)
        do { try engine.store.delete(id, keepingPlan: true) } catch { throw .storage(error.description) }
        engine.usedBytes = nil
        for step in engine.steps { await step.removed(asset) }
        let state = asset.state
        (asset.state, asset.isPaused, asset.failure, asset.retryCount) = (.queued, true, nil, 0)
        (asset.completedAt, asset.firstPlayAt) = (nil, nil)
        try await engine.index.update(asset)
        if state != .queued { engine.emit(.stateChanged(assetID: id, state: .queued)) }
        engine.emit(.queueChanged)
    }

    /// Moves `id` to place `index` of the queue (0: first; past the end: last); the others keep their order.
    static func move(_ engine: isolated DownloadManager, _ id: String, to index: Int) async throws(DownloadError) {
        guard index >= 0 else { throw .invalidArgument("a place in the queue is 0 or more") }
        var order = try await engine.index.all()
        guard let from = order.firstIndex(where: { $0.id == id }) else { throw .notFound(id) }
        order.insert(order.remove(at: from), at: min(index, order.count))
        for (position, var asset) in order.enumerated() where asset.position != position {
            asset.position = position
            try await engine.index.update(asset)
        }
        engine.emit(.queueChanged)
        engine.wake()
    }

    /// Gives `id` a new availability window, applied at once: past its new end, it expires now (files deleted).
    static func setWindow(_ engine: isolated DownloadManager, _ id: String, _ window: AvailabilityWindow) async throws(DownloadError) {
        try await update(engine, id) { $0.window = window }
        if let asset = try await engine.index.find(id), QueuePolicy.hasExpired(asset, at: engine.environment.clock.now) {
            _ = try await expire(engine, [id])
        }
        engine.emit(.queueChanged)
        engine.wake()
    }

    static func setEnabled(_ engine: isolated DownloadManager, _ value: Bool) async throws(DownloadError) {
        try await engine.index.setSetting("enabled", value ? "true" : "false")
        engine.enabled = value
        if !value, let current = engine.current { await stopCurrent(engine, ifItIs: current.id) }
        engine.setStatus(value ? .idle : .disabled)
        if value { engine.wake() }
    }

    private static func update(_ engine: isolated DownloadManager, _ id: String, _ change: (inout DownloadAsset) -> Void) async throws(DownloadError) {
        guard var asset = try await engine.index.find(id) else { throw .notFound(id) }
        let state = asset.state
        change(&asset)
        try await engine.index.update(asset)
        if asset.state != state { engine.emit(.stateChanged(assetID: id, state: asset.state)) }
    }

    /// Stops the attempt at `id`, if one is in progress, and waits until it has ended.
    static func stopCurrent(_ engine: isolated DownloadManager, ifItIs id: String) async {
        guard let current = engine.current, current.id == id else { return }
        current.stop.raise()
        await current.ended.wait()
    }

    /// Expires `ids`: stops, deletes files (the plan stays: the asset is listed as expired), marks expired, reports.
    static func expire(_ engine: isolated DownloadManager, _ ids: [String]) async throws(DownloadError) -> [String] {
        var expired: [String] = []
        for id in ids {
            guard var asset = try await engine.index.find(id), asset.state != .expired else { continue }
            await stopCurrent(engine, ifItIs: id)
            do { try engine.store.delete(id, keepingPlan: true) } catch { throw .storage(error.description) }
            engine.usedBytes = nil
            asset.state = .expired
            asset.failure = nil
            try await engine.index.update(asset)
            expired.append(id)
            engine.emit(.stateChanged(assetID: id, state: .expired))
        }
        if !expired.isEmpty { engine.emit(.expiredAssetsReset(expired)) }
        return expired
    }
}
