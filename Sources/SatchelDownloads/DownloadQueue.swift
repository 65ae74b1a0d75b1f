import Foundation
import SatchelStreams

/// The engine's queue and every change to it: the index rows and the files they own (add, pause, resume, remove,
/// the global switch, expiry). It holds the switch, the assets being removed (nothing may write their rows back
/// meanwhile) and the signal that work may have come in. Runs on the engine's isolation: the run loop never sees
/// half a change.
final class DownloadQueue {
    private let parts: EngineParts
    private let reporter: EngineReporter
    private let attempt: AttemptSlot
    private let usage: StorageUsage
    /// The global switch (persisted in the index).
    private(set) var enabled: Bool
    /// Assets being removed: nothing may write their rows back meanwhile.
    private(set) var removing: Set<String> = []
    /// Raised when work may have come in (a fresh one after each wait of the run loop).
    private(set) var changed = StopSignal()

    init(parts: EngineParts, reporter: EngineReporter, attempt: AttemptSlot, usage: StorageUsage, enabled: Bool) {
        self.parts = parts
        self.reporter = reporter
        self.attempt = attempt
        self.usage = usage
        self.enabled = enabled
    }

    /// Tells the run loop there may be work.
    func wake() {
        changed.raise()
    }

    /// A fresh signal, once the run loop has seen the last one raised.
    func rearm() {
        if changed.isRaised { changed = StopSignal() }
    }

    /// Notes that another process switched downloads off.
    func switchedOffElsewhere() {
        enabled = false
    }

    /// Whether `id` is being removed.
    func isRemoving(_ id: String) -> Bool {
        removing.contains(id)
    }

    nonisolated(nonsending) func add(url: String, id: String?, options: DownloadOptions,
                    window: AvailabilityWindow, paused: Bool) async throws(DownloadError) -> DownloadAsset {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme), parsed.host != nil else {
            throw .invalidArgument("not an http(s) URL: \(url)")
        }
        let limit = min(parts.configuration.maximumAssets, DownloadIndex.recordLimit)
        guard try await parts.index.count() < limit else { throw .queueFull(limit) }
        var named = id
        if named == nil {
            // A readable ID from the URL (its playlist's or folder's name), unique among the assets.
            let existing = Set(try await parts.index.all().map(\.id) + (try await parts.index.damaged()).map(\.id))
            named = DownloadNaming.id(for: parsed, taken: existing.contains)
        }
        guard let id = named else { throw .invalidArgument("no asset ID") }
        guard AssetStore.isValidID(id) else { throw .invalidArgument("asset IDs are 1-128 of A-Z a-z 0-9 . _ - (got \(id))") }
        guard try await parts.index.find(id) == nil else { throw .duplicateID(id) }
        guard try await !parts.index.damaged().contains(where: { $0.id == id }) else { throw .duplicateID(id) }
        let plan: DownloadPlan
        do {
            let (headers, origins) = (options.headers ?? [:], options.origins ?? .any)
            let probe = try await parts.fetcher.probe(parsed, headers: headers, origins: origins)
            let fetcher = parts.fetcher
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
                                  options: options, plan: plan, addedAt: parts.now, completedAt: nil, firstPlayAt: nil,
                                  position: try await parts.index.nextPosition(), plannedBytes: plan.expectedBytes.map(Int64.init))
        // The plan goes into the asset's folder first (crash-safe); the index row that makes the asset exist follows.
        do { try parts.store.writePlan(id, plan) } catch { throw .storage(error.description) }
        do {
            try await parts.index.save(asset)
        } catch {
            try? parts.store.delete(id, keepingPlan: false)  // the row was never written: nothing may stay behind
            throw error
        }
        reporter.emit(.queueChanged)
        reporter.emit(.added(assetID: id))
        reporter.emit(.stateChanged(assetID: id, state: .queued))
        wake()
        return asset
    }

    nonisolated(nonsending) func pause(_ id: String) async throws(DownloadError) {
        try await update(id) { $0.isPaused = true }
        await attempt.stop(ifItIs: id)
        reporter.emit(.queueChanged)
    }

    nonisolated(nonsending) func resume(_ id: String) async throws(DownloadError) {
        try await update(id) { $0.isPaused = false }
        reporter.emit(.queueChanged)
        wake()
    }

    nonisolated(nonsending) func clearRetryCount(_ id: String) async throws(DownloadError) {
        try await update(id) { asset in
            asset.retryCount = 0
            if asset.state == .blocked {
                asset.state = .queued
                asset.failure = nil
            }
        }
        reporter.emit(.retriesCleared(assetID: id))
        reporter.emit(.queueChanged)
        wake()
    }

    nonisolated(nonsending) func remove(_ id: String) async throws(DownloadError) {
        let found = try await parts.index.find(id)
        if found == nil {
            guard try await parts.index.damaged().contains(where: { $0.id == id }) else { throw .notFound(id) }
        }
        removing.insert(id)
        defer { removing.remove(id) }
        await attempt.stop(ifItIs: id)
        do { try parts.store.delete(id, keepingPlan: false) } catch { throw .storage(error.description) }
        try await parts.index.delete(id)
        if let found { for step in parts.steps { await step.removed(found) } }
        usage.forget()
        reporter.emit(.removed(assetID: id))
        reporter.emit(.queueChanged)
    }

    nonisolated(nonsending) func reset(_ id: String) async throws(DownloadError) {
        guard var asset = try await parts.index.find(id) else { throw .notFound(id) }
        removing.insert(id)
        defer { removing.remove(id) }
        await attempt.stop(ifItIs: id)
        do { try parts.store.delete(id, keepingPlan: true) } catch { throw .storage(error.description) }
        usage.forget()
        for step in parts.steps { await step.removed(asset) }
        let state = asset.state
        (asset.state, asset.isPaused, asset.failure, asset.retryCount) = (.queued, true, nil, 0)
        (asset.completedAt, asset.firstPlayAt) = (nil, nil)
        try await parts.index.update(asset)
        if state != .queued { reporter.emit(.stateChanged(assetID: id, state: .queued)) }
        reporter.emit(.queueChanged)
    }

    /// Moves `id` to place `index` of the queue (0: first; past the end: last); the others keep their order.
    nonisolated(nonsending) func move(_ id: String, to index: Int) async throws(DownloadError) {
        guard index >= 0 else { throw .invalidArgument("a place in the queue is 0 or more") }
        var order = try await parts.index.all()
        guard let from = order.firstIndex(where: { $0.id == id }) else { throw .notFound(id) }
        order.insert(order.remove(at: from), at: min(index, order.count))
        for (position, var asset) in order.enumerated() where asset.position != position {
            asset.position = position
            try await parts.index.update(asset)
        }
        reporter.emit(.queueChanged)
        wake()
    }

    /// Gives `id` a new availability window, applied at once: past its new end, it expires now (files deleted).
    nonisolated(nonsending) func setWindow(_ id: String, _ window: AvailabilityWindow) async throws(DownloadError) {
        try await update(id) { $0.window = window }
        if let asset = try await parts.index.find(id), QueuePolicy.hasExpired(asset, at: parts.now) {
            _ = try await expire([id])
        }
        reporter.emit(.queueChanged)
        wake()
    }

    nonisolated(nonsending) func setEnabled(_ value: Bool) async throws(DownloadError) {
        try await parts.index.setSetting("enabled", value ? "true" : "false")
        enabled = value
        if !value { await attempt.stop() }
        reporter.setStatus(value ? .idle : .disabled)
        if value { wake() }
    }

    private nonisolated(nonsending) func update(_ id: String, _ change: (inout DownloadAsset) -> Void) async throws(DownloadError) {
        guard var asset = try await parts.index.find(id) else { throw .notFound(id) }
        let state = asset.state
        change(&asset)
        try await parts.index.update(asset)
        if asset.state != state { reporter.emit(.stateChanged(assetID: id, state: asset.state)) }
    }

    /// Removes every asset not yet downloaded (`keepingComplete`), or every asset.
    nonisolated(nonsending) func removeAll(keepingComplete: Bool) async throws(DownloadError) {
        for asset in try await parts.index.all() where !keepingComplete || asset.state != .complete { try await remove(asset.id) }
    }

    /// Expires every asset whose window has closed.
    nonisolated(nonsending) func sweepExpired() async throws(DownloadError) -> [String] {
        let now = parts.now
        return try await expire(try await parts.index.all().filter { QueuePolicy.hasExpired($0, at: now) }.map(\.id))
    }

    /// Expires `ids`: stops, deletes files (the plan stays: the asset is listed as expired), marks expired, reports.
    nonisolated(nonsending) func expire(_ ids: [String]) async throws(DownloadError) -> [String] {
        var expired: [String] = []
        for id in ids {
            guard var asset = try await parts.index.find(id), asset.state != .expired else { continue }
            await attempt.stop(ifItIs: id)
            do { try parts.store.delete(id, keepingPlan: true) } catch { throw .storage(error.description) }
            usage.forget()
            asset.state = .expired
            asset.failure = nil
            try await parts.index.update(asset)
            expired.append(id)
            reporter.emit(.stateChanged(assetID: id, state: .expired))
        }
        if !expired.isEmpty { reporter.emit(.expiredAssetsReset(expired)) }
        return expired
    }
}
