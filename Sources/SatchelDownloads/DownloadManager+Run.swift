import Foundation

extension DownloadManager {
    // MARK: Background

    /// Downloads in the background, as an app's engine does: ``runContinuously(recheckInterval:)`` in a task
    /// this engine holds, so ``stop()`` (or ``close()``) ends it and waits for it.
    public func start(recheckInterval: Duration = .seconds(30)) {
        guard background == nil else { return }
        background = Task { await self.runContinuously(recheckInterval: recheckInterval) }
    }

    /// Stops the background loop (the current download stops; its partial files stay).
    public func stop() async {
        guard let background else { return }
        self.background = nil
        background.cancel()
        wake()
        await background.value
    }

    /// Works through the queue now, and again whenever assets are added or resumed, retries are cleared,
    /// downloads are enabled or rules change, and every `recheckInterval` (free space and networks change on
    /// their own), until the calling task is cancelled. For callers that own their tasks; ``start(recheckInterval:)``
    /// runs it in the background.
    public func runContinuously(recheckInterval: Duration = .seconds(30)) async {
        while !Task.isCancelled {
            _ = await run()
            await waitForWork(recheckInterval)
        }
    }

    /// Waits until ``wake()`` or `interval` passes, whichever is first (both children end before it returns).
    private func waitForWork(_ interval: Duration) async {
        let signal = wakeUp
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await signal.wait() }
            group.addTask { try? await Task.sleep(for: interval) }
            await group.next()
            group.cancelAll()
        }
        if signal.isRaised { wakeUp = StopSignal() }
    }

    /// Tells the background loop there may be work.
    func wake() {
        wakeUp.raise()
    }

    // MARK: Passes

    /// Works through the queue until nothing more can be done now: every asset is complete, blocked,
    /// paused, held by a rule or expired, or downloads are switched off. Cancelling the calling task
    /// stops the current download (its partial files stay, to be resumed).
    /// An index that cannot be read or written stops the run at once, with a ``DownloadEvent/storageFailed(_:)``
    /// event and ``RunSummary/storageFailure`` set (carrying on would retry without counting, for ever).
    public func run() async -> RunSummary {
        storageFailure = nil
        _ = await checked { () async throws(DownloadError) in try await upgradeDataStore() }
        await reportDamage()
        var visited: Set<String> = []
        var anotherPass = false
        while !Task.isCancelled, enabled, storageFailure == nil, !closed {
            guard let queue = await checked({ () async throws(DownloadError) in try await index.all() }) else { break }
            let policy = QueuePolicy(rules: configuration.rules)
            switch policy.next(queue: queue, environment: queueEnvironment(), visited: visited) {
            case let .expire(ids):
                _ = await checked { () async throws(DownloadError) in try await expire(ids) }
            case let .hold(id, rule):
                visited.insert(id)
                EngineLog.held(id, by: rule, logger: configuration.logger)
                if var asset = queue.first(where: { $0.id == id }) { await record(&asset, state: .waiting, failure: rule) }
            case let .download(id):
                visited.insert(id)
                if let asset = queue.first(where: { $0.id == id }), await work(on: asset) { anotherPass = true }
            case .endOfPass:
                guard anotherPass, !Task.isCancelled else {
                    setStatus(enabled ? .idle : .disabled)
                    return await finalSummary()
                }
                anotherPass = false
                visited = []
                do { try await Task.sleep(for: configuration.passDelay) } catch { break }
            }
        }
        setStatus(enabled ? .idle : .disabled)
        return await finalSummary()
    }

    private func finalSummary() async -> RunSummary {
        var summary = await summary()
        if let storageFailure { summary.storageFailure = storageFailure.description }
        return summary
    }

    /// The values a pass decides on.
    private func queueEnvironment() -> QueueEnvironment {
        QueueEnvironment(network: environment.networkType(), freeSpace: environment.freeSpace(store.root), usedBytes: currentUsage(),
                         now: environment.clock.now)
    }

    /// Runs an index operation; a failure is recorded (stopping the run), reported, and answers nil.
    func checked<T>(_ body: () async throws(DownloadError) -> T) async -> T? {
        do {
            return try await body()
        } catch {
            if storageFailure == nil {
                storageFailure = error
                emit(.storageFailed(error.description))
            }
            return nil
        }
    }

    /// The states of every asset.
    public func summary() async -> RunSummary {
        let assets: [DownloadAsset]
        var failure: String?
        do { assets = try await index.all() } catch {
            assets = []
            failure = error.description
        }
        var states: [DownloadState: Int] = [:]
        let kept = assets.filter { !removing.contains($0.id) }  // an asset being removed is no longer queued
        for asset in kept { states[asset.state, default: 0] += 1 }
        return RunSummary(states: states, paused: kept.filter(\.isPaused).count, enabled: enabled, storageFailure: failure)
    }

    /// One asset in one pass: up to three attempts. Returns true when it errored and may be tried in the next pass.
    private func work(on start: DownloadAsset) async -> Bool {
        var asset = start
        for attempt in 1...QueuePolicy.attemptsPerPass {
            // Re-read: a pause, removal or switch-off may have come in (from this process or another).
            guard enabled, !closed, !Task.isCancelled, storageFailure == nil, !removing.contains(asset.id),
                  let found = await checked({ () async throws(DownloadError) in try await index.find(asset.id) }),
                  let latest = found, QueuePolicy.isDownloadable(latest), !removing.contains(asset.id),
                  let planned = await checked({ () async throws(DownloadError) in try withPlan(latest) }) else { return false }
            asset = planned
            guard await record(&asset, state: .downloading, failure: asset.failure) else { return false }
            setStatus(.downloading(asset.id))
            emit(.started(assetID: asset.id))
            let result = await download(asset)
            for warning in result.warnings { emit(.warning(assetID: asset.id, message: warning)) }
            if let failure = result.failure, failure.needsAuthorization, case let .httpStatus(_, status) = failure {
                emit(.authorizationRequired(assetID: asset.id, status: status))
            }
            guard !removing.contains(asset.id), let found = await checked({ () async throws(DownloadError) in try await index.find(asset.id) }),
                  let latest = found else { return false }  // removed meanwhile, or the index failed
            let outcome = QueuePolicy.outcome(of: result.failure, attempt: attempt, retryCount: latest.retryCount)
            let next = QueuePolicy.apply(outcome, to: latest, now: environment.clock.now)
            let plan = asset.plan
            asset = latest
            asset.plan = plan
            asset.retryCount = next.retryCount
            asset.completedAt = next.completedAt
            switch outcome {
            case .complete:
                await record(&asset, state: next.state, failure: next.failure)
                for step in steps { await step.finished(asset) }
                emit(.finished(assetID: asset.id))
                return false
            case .stopped, .wait:
                if case let .wait(rule) = outcome { EngineLog.held(asset.id, by: rule, logger: configuration.logger) }
                await record(&asset, state: next.state, failure: next.failure)
                return false
            case let .block(failure):
                emit(.error(assetID: asset.id, failure: failure, willRetry: false))
                await record(&asset, state: next.state, failure: next.failure)
                return false
            case let .endPass(failure, blocked):
                emit(.error(assetID: asset.id, failure: failure, willRetry: !blocked))
                configuration.logger.info(blocked ? "blocked after \(QueuePolicy.passesBeforeBlocked) errored passes" : "left for the next pass",
                                          metadata: ["asset": "\(asset.id)", "retryCount": "\(next.retryCount)"])
                await record(&asset, state: next.state, failure: next.failure)
                return QueuePolicy.wantsAnotherPass(outcome)
            case let .retry(failure):
                emit(.error(assetID: asset.id, failure: failure, willRetry: true))
                configuration.logger.info("retrying in \(configuration.retryDelay)",
                                          metadata: ["asset": "\(asset.id)", "attempt": "\(attempt + 1) of \(QueuePolicy.attemptsPerPass)"])
                guard await record(&asset, state: next.state, failure: next.failure) else { return false }
                do { try await Task.sleep(for: configuration.retryDelay) } catch { return false }
            }
        }
        return false
    }

    /// Saves the asset's new state; false (the run stopping) when the index cannot be written.
    @discardableResult
    private func record(_ asset: inout DownloadAsset, state: DownloadState, failure: DownloadFailure?) async -> Bool {
        guard !removing.contains(asset.id) else { return true }
        // A pause made while this asset was being worked on is the user's and wins over the copy held here.
        let id = asset.id
        guard let row = await checked({ () async throws(DownloadError) in try await index.isPaused(id) }) else { return false }
        // No row: the asset was removed meanwhile, and nothing may write it back.
        guard let paused = row, !removing.contains(id) else { return true }
        asset.isPaused = paused
        let changed = asset.state != state
        asset.state = state
        asset.failure = failure
        let saved = asset
        guard let written = await checked({ () async throws(DownloadError) in try await index.update(saved) }) else { return false }
        guard written else { return true }  // removed meanwhile
        if changed { emit(.stateChanged(assetID: asset.id, state: state)) }
        return true
    }

    private func currentUsage() -> Int64 {
        if let usedBytes { return usedBytes }
        let used = store.usage()
        usedBytes = used
        return used
    }

    /// One attempt at an asset: the steps (license, permission), then the worker.
    private func download(_ asset: DownloadAsset) async -> DownloadWorker.Result {
        for step in steps {
            do throws(DownloadFailure) { try await step.prepare(asset) } catch {
                return DownloadWorker.Result(failure: error, warnings: [], progress: nil)
            }
        }
        let root = store.root, environment = environment
        let budget = DownloadBudget(used: currentUsage(), rules: configuration.rules, freeSpace: { environment.freeSpace(root) })
        let worker = DownloadWorker(fetcher: fetcher, store: store, parallelism: configuration.parallelism,
                                    maxParallelism: configuration.maxParallelism,
                                    progressInterval: configuration.progressInterval)
        let control = (id: asset.id, stop: StopSignal(), ended: StopSignal())
        current = control
        defer {
            control.ended.raise()
            if current?.id == asset.id { current = nil }
        }
        let result = await worker.attempt(asset, budget: budget, stop: control.stop) { live, tick in
            await self.tick(asset, live: live, checkIndex: tick % 4 == 0)
        }
        usedBytes = budget.usedBytes
        if let live = result.progress { report(asset, live: live) }
        return result
    }

    private func report(_ asset: DownloadAsset, live: LiveProgress) {
        let snapshot = live.snapshot
        emit(.progress(DownloadProgress(assetID: asset.id, plan: asset.plan, complete: snapshot.complete, bytes: snapshot.bytes,
                                        readyDuration: configuration.readyDuration)))
    }

    /// Reports progress; now and then notices a pause, removal or switch-off made by another process.
    /// False stops the attempt (so does an index that cannot be read: the run stops).
    private func tick(_ asset: DownloadAsset, live: LiveProgress, checkIndex: Bool) async -> Bool {
        report(asset, live: live)
        guard checkIndex else { return true }
        let id = asset.id
        guard let paused = await checked({ () async throws(DownloadError) in try await index.isPaused(id) }),
              let setting = await checked({ () async throws(DownloadError) in try await index.setting("enabled") }) else { return false }
        if setting == "false" { enabled = false }
        return paused == false && setting != "false"
    }
}
