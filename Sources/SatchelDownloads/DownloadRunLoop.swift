import Foundation

/// The engine's run loop: passes through the queue (the pure `QueuePolicy` decides), up to three attempts per asset
/// in a pass (each run by a ``DownloadWorker``), progress, and the background loop that wakes on work. Runs on the
/// engine's isolation.
enum DownloadRunLoop {
    // MARK: Background

    static func start(_ engine: isolated DownloadManager, recheckInterval: Duration) {
        guard engine.background == nil else { return }
        let network = engine.environment.network
        engine.background = Task {
            // A change of network wakes the loop: a download held off a metered network resumes when it changes back.
            let watcher = Task { [weak engine] in
                for await _ in network.changes() { await engine?.wake() }
            }
            await engine.runContinuously(recheckInterval: recheckInterval)
            watcher.cancel()
        }
    }

    static func stop(_ engine: isolated DownloadManager) async {
        guard let background = engine.background else { return }
        engine.background = nil
        background.cancel()
        engine.wake()
        await background.value
    }

    static func runContinuously(_ engine: isolated DownloadManager, recheckInterval: Duration) async {
        while !Task.isCancelled {
            _ = await run(engine)
            await waitForWork(engine, recheckInterval)
        }
    }

    /// Waits until ``DownloadManager/wake()`` or `interval` passes, whichever is first (both children end before it
    /// returns).
    private static func waitForWork(_ engine: isolated DownloadManager, _ interval: Duration) async {
        let signal = engine.wakeUp
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await signal.wait() }
            group.addTask { try? await Task.sleep(for: interval) }
            await group.next()
            group.cancelAll()
        }
        if signal.isRaised { engine.wakeUp = StopSignal() }
    }

    // MARK: Passes

    static func run(_ engine: isolated DownloadManager) async -> DownloadManager.RunSummary {
        engine.storageFailure = nil
        _ = await checked(engine) { () async throws(DownloadError) in try await DownloadUpkeep.upgradeDataStore(engine) }
        await DownloadUpkeep.reportDamage(engine)
        var visited: Set<String> = []
        var anotherPass = false
        while !Task.isCancelled, engine.enabled, engine.storageFailure == nil, !engine.closed {
            guard let queue = await checked(engine, { () async throws(DownloadError) in try await engine.index.all() }) else { break }
            let policy = QueuePolicy(rules: engine.configuration.rules)
            switch policy.next(queue: queue, environment: queueEnvironment(engine), visited: visited) {
            case let .expire(ids):
                _ = await checked(engine) { () async throws(DownloadError) in try await DownloadQueue.expire(engine, ids) }
            case let .hold(id, rule):
                visited.insert(id)
                EngineLog.held(id, by: rule, logger: engine.configuration.logger)
                if var asset = queue.first(where: { $0.id == id }) { await record(engine, &asset, state: .waiting, failure: rule) }
            case let .download(id):
                visited.insert(id)
                if let asset = queue.first(where: { $0.id == id }), await work(engine, on: asset) { anotherPass = true }
            case .endOfPass:
                guard anotherPass, !Task.isCancelled else {
                    engine.setStatus(engine.enabled ? .idle : .disabled)
                    return await finalSummary(engine)
                }
                anotherPass = false
                visited = []
                do { try await Task.sleep(for: engine.configuration.passDelay) } catch { break }
            }
        }
        engine.setStatus(engine.enabled ? .idle : .disabled)
        return await finalSummary(engine)
    }

    private static func finalSummary(_ engine: isolated DownloadManager) async -> DownloadManager.RunSummary {
        var summary = await summary(engine)
        if let failure = engine.storageFailure { summary.storageFailure = failure.description }
        return summary
    }

    /// The values a pass decides on.
    private static func queueEnvironment(_ engine: isolated DownloadManager) -> QueueEnvironment {
        let network = engine.environment.network.current
        if network == .unknown, !engine.toldUnknownNetwork {
            engine.toldUnknownNetwork = true
            let rules = engine.configuration.rules
            engine.configuration.logger.notice("the network's type (metered or not) cannot be detected",
                                               metadata: ["meteredUnknown": "\(rules.downloadOverCellular ? "allow" : rules.meteredUnknown.rawValue)"])
        }
        return QueueEnvironment(network: network, freeSpace: engine.environment.freeSpace(engine.store.root), usedBytes: currentUsage(engine),
                                now: engine.environment.clock.now)
    }

    /// Runs an index operation; a failure is recorded (stopping the run), reported, and answers nil.
    static func checked<T>(_ engine: isolated DownloadManager, _ body: () async throws(DownloadError) -> T) async -> T? {
        do {
            return try await body()
        } catch {
            if engine.storageFailure == nil {
                engine.storageFailure = error
                engine.emit(.storageFailed(error.description))
            }
            return nil
        }
    }

    static func summary(_ engine: isolated DownloadManager) async -> DownloadManager.RunSummary {
        let assets: [DownloadAsset]
        var failure: String?
        do { assets = try await engine.index.all() } catch {
            assets = []
            failure = error.description
        }
        var states: [DownloadState: Int] = [:]
        let kept = assets.filter { !engine.removing.contains($0.id) }  // an asset being removed is no longer queued
        for asset in kept { states[asset.state, default: 0] += 1 }
        return DownloadManager.RunSummary(states: states, paused: kept.filter(\.isPaused).count, enabled: engine.enabled, storageFailure: failure)
    }

    /// One asset in one pass: up to three attempts. Returns true when it errored and may be tried in the next pass.
    private static func work(_ engine: isolated DownloadManager, on start: DownloadAsset) async -> Bool {
        var asset = start
        for attempt in 1...QueuePolicy.attemptsPerPass {
            // Re-read: a pause, removal or switch-off may have come in (from this process or another).
            guard engine.enabled, !engine.closed, !Task.isCancelled, engine.storageFailure == nil, !engine.removing.contains(asset.id),
                  let found = await checked(engine, { () async throws(DownloadError) in try await engine.index.find(asset.id) }),
                  let latest = found, QueuePolicy.isDownloadable(latest), !engine.removing.contains(asset.id),
                  let planned = await checked(engine, { () async throws(DownloadError) in try DownloadReads.withPlan(engine, latest) }) else { return false }
            asset = planned
            guard await record(engine, &asset, state: .downloading, failure: asset.failure) else { return false }
            engine.setStatus(.downloading(asset.id))
            engine.emit(.started(assetID: asset.id))
            let result = await download(engine, asset)
            for warning in result.warnings { engine.emit(.warning(assetID: asset.id, message: warning)) }
            if let failure = result.failure, failure.needsAuthorization, case let .httpStatus(_, status) = failure {
                engine.emit(.authorizationRequired(assetID: asset.id, status: status))
            }
            guard !engine.removing.contains(asset.id),
                  let found = await checked(engine, { () async throws(DownloadError) in try await engine.index.find(asset.id) }),
                  let latest = found else { return false }  // removed meanwhile, or the index failed
            let outcome = QueuePolicy.outcome(of: result.failure, attempt: attempt, retryCount: latest.retryCount)
            let next = QueuePolicy.apply(outcome, to: latest, now: engine.environment.clock.now)
            let plan = asset.plan
            asset = latest
            asset.plan = plan
            asset.retryCount = next.retryCount
            asset.completedAt = next.completedAt
            switch outcome {
            case .complete:
                await record(engine, &asset, state: next.state, failure: next.failure)
                engine.emit(.processing(assetID: asset.id, fraction: 0))
                for (index, step) in engine.steps.enumerated() {
                    await step.finished(asset)
                    engine.emit(.processing(assetID: asset.id, fraction: Double(index + 1) / Double(engine.steps.count)))
                }
                if engine.steps.isEmpty { engine.emit(.processing(assetID: asset.id, fraction: 1)) }
                engine.emit(.finished(assetID: asset.id))
                return false
            case .stopped, .wait:
                if case let .wait(rule) = outcome { EngineLog.held(asset.id, by: rule, logger: engine.configuration.logger) }
                await record(engine, &asset, state: next.state, failure: next.failure)
                return false
            case let .block(failure):
                engine.emit(.error(assetID: asset.id, failure: failure, willRetry: false))
                await record(engine, &asset, state: next.state, failure: next.failure)
                return false
            case let .endPass(failure, blocked):
                engine.emit(.error(assetID: asset.id, failure: failure, willRetry: !blocked))
                engine.configuration.logger.info(blocked ? "blocked after \(QueuePolicy.passesBeforeBlocked) errored passes" : "left for the next pass",
                                                 metadata: ["asset": "\(asset.id)", "retryCount": "\(next.retryCount)"])
                await record(engine, &asset, state: next.state, failure: next.failure)
                return QueuePolicy.wantsAnotherPass(outcome)
            case let .retry(failure):
                engine.emit(.error(assetID: asset.id, failure: failure, willRetry: true))
                engine.configuration.logger.info("retrying in \(engine.configuration.retryDelay)",
                                                 metadata: ["asset": "\(asset.id)", "attempt": "\(attempt + 1) of \(QueuePolicy.attemptsPerPass)"])
                guard await record(engine, &asset, state: next.state, failure: next.failure) else { return false }
                do { try await Task.sleep(for: engine.configuration.retryDelay) } catch { return false }
            }
        }
        return false
    }

    /// Saves the asset's new state; false (the run stopping) when the index cannot be written.
    @discardableResult
    private static func record(_ engine: isolated DownloadManager, _ asset: inout DownloadAsset, state: DownloadState,
                               failure: DownloadFailure?) async -> Bool {
        guard !engine.removing.contains(asset.id) else { return true }
        // A pause made while this asset was being worked on is the user's and wins over the copy held here.
        let id = asset.id
        guard let row = await checked(engine, { () async throws(DownloadError) in try await engine.index.isPaused(id) }) else { return false }
        // No row: the asset was removed meanwhile, and nothing may write it back.
        guard let paused = row, !engine.removing.contains(id) else { return true }
        asset.isPaused = paused
        let changed = asset.state != state
        asset.state = state
        asset.failure = failure
        let saved = asset
        guard let written = await checked(engine, { () async throws(DownloadError) in try await engine.index.update(saved) }) else { return false }
        guard written else { return true }  // removed meanwhile
        if changed { engine.emit(.stateChanged(assetID: asset.id, state: state)) }
        return true
    }

    /// The bytes the engine's files use (scanned once, then counted as files come and go).
    static func currentUsage(_ engine: isolated DownloadManager) -> Int64 {
        if let used = engine.usedBytes { return used }
        let used = engine.store.usage()
        engine.usedBytes = used
        return used
    }

    /// One attempt at an asset: the steps (license, permission), then the worker.
    private static func download(_ engine: isolated DownloadManager, _ asset: DownloadAsset) async -> DownloadWorker.Result {
        for step in engine.steps {
            do throws(DownloadFailure) { try await step.prepare(asset) } catch {
                return DownloadWorker.Result(failure: error, warnings: [], progress: nil)
            }
        }
        let root = engine.store.root, environment = engine.environment
        let budget = DownloadBudget(used: currentUsage(engine), rules: engine.configuration.rules, freeSpace: { environment.freeSpace(root) })
        let worker = DownloadWorker(fetcher: engine.fetcher, store: engine.store, parallelism: engine.configuration.parallelism,
                                    maxParallelism: engine.configuration.maxParallelism,
                                    progressInterval: engine.configuration.progressInterval)
        let control = (id: asset.id, stop: StopSignal(), ended: StopSignal())
        engine.current = control
        defer {
            control.ended.raise()
            if engine.current?.id == asset.id { engine.current = nil }
        }
        engine.networkHold = nil
        var result = await worker.attempt(asset, budget: budget, stop: control.stop) { live, tick in
            await DownloadRunLoop.tick(engine, asset, live: live, checkIndex: tick % 4 == 0)
        }
        // Stopped because the network became one the rules keep downloads off: the asset waits with that reason.
        if result.failure == .cancelled, let held = engine.networkHold { result.failure = held }
        engine.usedBytes = budget.usedBytes
        if let live = result.progress { report(engine, asset, live: live) }
        return result
    }

    private static func report(_ engine: isolated DownloadManager, _ asset: DownloadAsset, live: LiveProgress) {
        let snapshot = live.snapshot
        engine.emit(.progress(DownloadProgress(assetID: asset.id, plan: asset.plan, complete: snapshot.complete, bytes: snapshot.bytes,
                                               readyDuration: engine.configuration.readyDuration)))
    }

    /// Reports progress; stops the attempt when the network became one the rules keep downloads off; now and then notices
    /// a pause, removal or switch-off made by another process.
    /// False stops the attempt (so does an index that cannot be read: the run stops).
    static func tick(_ engine: isolated DownloadManager, _ asset: DownloadAsset, live: LiveProgress, checkIndex: Bool) async -> Bool {
        report(engine, asset, live: live)
        if let held = QueuePolicy(rules: engine.configuration.rules).networkHold(engine.environment.network.current) {
            engine.networkHold = held
            return false
        }
        guard checkIndex else { return true }
        let id = asset.id
        guard let paused = await checked(engine, { () async throws(DownloadError) in try await engine.index.isPaused(id) }),
              let setting = await checked(engine, { () async throws(DownloadError) in try await engine.index.setting("enabled") }) else { return false }
        if setting == "false" { engine.enabled = false }
        return paused == false && setting != "false"
    }
}
