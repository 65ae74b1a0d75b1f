import Foundation

/// The engine's run loop: passes through the queue (the pure `QueuePolicy` decides), up to three attempts per asset
/// in a pass (each run by a ``DownloadWorker``), progress, and the background loop that wakes on work. Runs on the
/// engine's isolation.
final class DownloadRunLoop {
    private let parts: EngineParts
    private let reporter: EngineReporter
    private let queue: DownloadQueue
    private let reads: DownloadReads
    private let upkeep: DownloadUpkeep
    private let attempt: AttemptSlot
    private let usage: StorageUsage
    /// The background loop, once started (the engine makes it on its own isolation); ``stop()`` ends and awaits it.
    private(set) var background: Task<Void, Never>?
    /// True once the engine closes: no pass or attempt starts after.
    private(set) var closed = false
    /// Whether the log has said that the network's type cannot be detected.
    private var toldUnknownNetwork = false
    /// The first index failure of the current run: the run stops at once (an unrecorded retry would loop).
    private var storageFailure: DownloadError?

    init(parts: EngineParts, reporter: EngineReporter, queue: DownloadQueue, reads: DownloadReads, upkeep: DownloadUpkeep,
         attempt: AttemptSlot, usage: StorageUsage) {
        self.parts = parts
        self.reporter = reporter
        self.queue = queue
        self.reads = reads
        self.upkeep = upkeep
        self.attempt = attempt
        self.usage = usage
    }

    // MARK: Background

    /// Holds the background loop the engine started.
    func hold(_ loop: Task<Void, Never>) {
        background = loop
    }

    /// No pass or attempt starts from now on.
    func close() {
        closed = true
    }

    nonisolated(nonsending) func stop() async {
        guard let background else { return }
        self.background = nil
        background.cancel()
        queue.wake()
        await background.value
    }

    nonisolated(nonsending) func runContinuously(recheckInterval: Duration) async {
        while !Task.isCancelled {
            _ = await run()
            await waitForWork(recheckInterval)
        }
    }

    /// Waits until ``DownloadManager/wake()`` or `interval` passes, whichever is first (both children end before it
    /// returns).
    private nonisolated(nonsending) func waitForWork(_ interval: Duration) async {
        let signal = queue.changed
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await signal.wait() }
            group.addTask { try? await Task.sleep(for: interval) }
            await group.next()
            group.cancelAll()
        }
        queue.rearm()
    }

    // MARK: Passes

    nonisolated(nonsending) func run() async -> DownloadManager.RunSummary {
        storageFailure = nil
        _ = await checked { () async throws(DownloadError) in try await upkeep.upgradeDataStore() }
        _ = await checked { () async throws(DownloadError) in try await upkeep.reportDamage() }
        var visited: Set<String> = []
        var anotherPass = false
        while !Task.isCancelled, queue.enabled, storageFailure == nil, !closed {
            guard let assets = await checked({ () async throws(DownloadError) in try await parts.index.all() }) else { break }
            let policy = QueuePolicy(rules: usage.rules)
            switch policy.next(queue: assets, environment: queueEnvironment(), visited: visited) {
            case let .expire(ids):
                _ = await checked { () async throws(DownloadError) in try await queue.expire(ids) }
            case let .hold(id, rule):
                visited.insert(id)
                EngineLog.held(id, by: rule, logger: parts.logger)
                if var asset = assets.first(where: { $0.id == id }) { await record(&asset, state: .waiting, failure: rule) }
            case let .download(id):
                visited.insert(id)
                if let asset = assets.first(where: { $0.id == id }), await work(on: asset) { anotherPass = true }
            case .endOfPass:
                guard anotherPass, !Task.isCancelled else {
                    reporter.setStatus(queue.enabled ? .idle : .disabled)
                    return await finalSummary()
                }
                anotherPass = false
                visited = []
                do { try await Task.sleep(for: parts.configuration.passDelay) } catch { break }
            }
        }
        reporter.setStatus(queue.enabled ? .idle : .disabled)
        return await finalSummary()
    }

    private nonisolated(nonsending) func finalSummary() async -> DownloadManager.RunSummary {
        var summary = await summary()
        if let failure = storageFailure { summary.storageFailure = failure.description }
        return summary
    }

    /// The values a pass decides on.
    private func queueEnvironment() -> QueueEnvironment {
        let network = parts.environment.network.current
        if network == .unknown, !toldUnknownNetwork {
            toldUnknownNetwork = true
            let rules = usage.rules
            parts.logger.notice("the network's type (metered or not) cannot be detected",
                                               metadata: ["meteredUnknown": "\(rules.downloadOverCellular ? "allow" : rules.meteredUnknown.rawValue)"])
        }
        return QueueEnvironment(network: network, freeSpace: parts.environment.freeSpace(parts.store.root), usedBytes: usage.current,
                                now: parts.now)
    }

    /// Runs an index operation; a failure is recorded (stopping the run), reported, and answers nil.
    private nonisolated(nonsending) func checked<T>(_ body: () async throws(DownloadError) -> T) async -> T? {
        do {
            return try await body()
        } catch {
            noteStorageFailure(error)
            return nil
        }
    }

    /// Records the run's first index failure (the run stops) and reports it.
    private func noteStorageFailure(_ error: DownloadError) {
        guard storageFailure == nil else { return }
        storageFailure = error
        reporter.emit(.storageFailed(error.description))
    }

    nonisolated(nonsending) func summary() async -> DownloadManager.RunSummary {
        // An asset being removed is no longer queued: those marked before the read (whose removal may end, and unmark
        // them, while the read is under way: their rows are then in the read but no longer marked) and after it.
        let removingBefore = queue.removing
        let assets: [DownloadAsset]
        var failure: String?
        do { assets = try await parts.index.all() } catch {
            assets = []
            failure = error.description
        }
        var states: [DownloadState: Int] = [:]
        let kept = assets.filter { !removingBefore.contains($0.id) && !queue.isRemoving($0.id) }
        for asset in kept { states[asset.state, default: 0] += 1 }
        return DownloadManager.RunSummary(states: states, paused: kept.filter(\.isPaused).count, enabled: queue.enabled, storageFailure: failure)
    }

    /// One asset in one pass: up to three attempts. Returns true when it errored and may be tried in the next pass.
    private nonisolated(nonsending) func work(on start: DownloadAsset) async -> Bool {
        var asset = start
        for attempt in 1...QueuePolicy.attemptsPerPass {
            // Re-read: a pause, removal or switch-off may have come in (from this process or another).
            guard queue.enabled, !closed, !Task.isCancelled, storageFailure == nil, !queue.isRemoving(asset.id),
                  let found = await checked({ () async throws(DownloadError) in try await parts.index.find(asset.id) }),
                  let latest = found, QueuePolicy.isDownloadable(latest), !queue.isRemoving(asset.id),
                  let planned = await checked({ () async throws(DownloadError) in try reads.withPlan(latest) }) else { return false }
            asset = planned
            guard await record(&asset, state: .downloading, failure: asset.failure) else { return false }
            reporter.setStatus(.downloading(asset.id))
            reporter.emit(.started(assetID: asset.id))
            let result = await download(asset)
            for warning in result.warnings { reporter.emit(.warning(assetID: asset.id, message: warning)) }
            if let failure = result.failure, failure.needsAuthorization, case let .httpStatus(_, status) = failure {
                reporter.emit(.authorizationRequired(assetID: asset.id, status: status))
            }
            guard !queue.isRemoving(asset.id),
                  let found = await checked({ () async throws(DownloadError) in try await parts.index.find(asset.id) }),
                  let latest = found else { return false }  // removed meanwhile, or the index failed
            let outcome = QueuePolicy.outcome(of: result.failure, attempt: attempt, retryCount: latest.retryCount)
            let next = QueuePolicy.apply(outcome, to: latest, now: parts.now)
            let plan = asset.plan
            asset = latest
            asset.plan = plan
            asset.retryCount = next.retryCount
            asset.completedAt = next.completedAt
            switch outcome {
            case .complete:
                await record(&asset, state: next.state, failure: next.failure)
                reporter.emit(.processing(assetID: asset.id, fraction: 0))
                for (index, step) in parts.steps.enumerated() {
                    await step.finished(asset)
                    reporter.emit(.processing(assetID: asset.id, fraction: Double(index + 1) / Double(parts.steps.count)))
                }
                if parts.steps.isEmpty { reporter.emit(.processing(assetID: asset.id, fraction: 1)) }
                reporter.emit(.finished(assetID: asset.id))
                return false
            case .stopped, .wait:
                if case let .wait(rule) = outcome { EngineLog.held(asset.id, by: rule, logger: parts.logger) }
                await record(&asset, state: next.state, failure: next.failure)
                return false
            case let .block(failure):
                reporter.emit(.error(assetID: asset.id, failure: failure, willRetry: false))
                await record(&asset, state: next.state, failure: next.failure)
                return false
            case let .endPass(failure, blocked):
                reporter.emit(.error(assetID: asset.id, failure: failure, willRetry: !blocked))
                parts.logger.info(blocked ? "blocked after \(QueuePolicy.passesBeforeBlocked) errored passes" : "left for the next pass",
                                                 metadata: ["asset": "\(asset.id)", "retryCount": "\(next.retryCount)"])
                await record(&asset, state: next.state, failure: next.failure)
                return QueuePolicy.wantsAnotherPass(outcome)
            case let .retry(failure):
                reporter.emit(.error(assetID: asset.id, failure: failure, willRetry: true))
                parts.logger.info("retrying in \(parts.configuration.retryDelay)",
                                                 metadata: ["asset": "\(asset.id)", "attempt": "\(attempt + 1) of \(QueuePolicy.attemptsPerPass)"])
                guard await record(&asset, state: next.state, failure: next.failure) else { return false }
                do { try await Task.sleep(for: parts.configuration.retryDelay) } catch { return false }
            }
        }
        return false
    }

    /// Saves the asset's new state; false (the run stopping) when the index cannot be written.
    @discardableResult
    private nonisolated(nonsending) func record(_ asset: inout DownloadAsset, state: DownloadState,
                               failure: DownloadFailure?) async -> Bool {
        guard !queue.isRemoving(asset.id) else { return true }
        // A pause made while this asset was being worked on is the user's and wins over the copy held here.
        let id = asset.id
        guard let row = await checked({ () async throws(DownloadError) in try await parts.index.isPaused(id) }) else { return false }
        // No row: the asset was removed meanwhile, and nothing may write it back.
        guard let paused = row, !queue.isRemoving(id) else { return true }
        asset.isPaused = paused
        let changed = asset.state != state
        asset.state = state
        asset.failure = failure
        let saved = asset
        guard let written = await checked({ () async throws(DownloadError) in try await parts.index.update(saved) }) else { return false }
        guard written else { return true }  // removed meanwhile
        if changed { reporter.emit(.stateChanged(assetID: asset.id, state: state)) }
        return true
    }

    /// One attempt at an asset: the steps (license, permission), then the worker.
    private nonisolated(nonsending) func download(_ asset: DownloadAsset) async -> DownloadWorker.Result {
        for step in parts.steps {
            do throws(DownloadFailure) { try await step.prepare(asset) } catch {
                return DownloadWorker.Result(failure: error, warnings: [], progress: nil)
            }
        }
        let budget = usage.budget()
        let worker = DownloadWorker(fetcher: parts.fetcher, store: parts.store, parallelism: parts.configuration.parallelism,
                                    maxParallelism: parts.configuration.maxParallelism,
                                    progressInterval: parts.configuration.progressInterval)
        let watch = AttemptWatch(asset: asset, index: parts.index, network: parts.environment.network, rules: usage.rulesInForce,
                                 sink: reporter.sink, readyDuration: parts.configuration.readyDuration)
        let control = attempt.begin(asset.id)
        defer { attempt.end(control) }
        var result = await worker.attempt(asset, budget: budget, stop: control.stop) { live, tick in await watch.tick(live, number: tick) }
        let found = watch.findings
        // Stopped because the network became one the rules keep downloads off: the asset waits with that reason.
        if result.failure == .cancelled, let held = found.networkHold { result.failure = held }
        if found.switchedOff { queue.switchedOffElsewhere() }
        if let failure = found.storageFailure { noteStorageFailure(failure) }
        usage.settle(budget)
        if let live = result.progress { watch.report(live) }
        return result
    }
}
