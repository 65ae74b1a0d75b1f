import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

/// The download engine: one queue, worked through in order, one asset at a time with several of its
/// files in parallel (seed 003's "Rule of Threes"), under the download rules and availability windows,
/// reporting through ``events()``. State lives in the ``DownloadIndex`` (SQLite) and the ``AssetStore``
/// (files), so the process may stop at any instant and pick up where the files end.
public actor DownloadManager {
    /// How the engine works.
    public struct Configuration: Sendable {
        /// The engine's directory: `downloads.sqlite` and the assets directory live here.
        public var dataDirectory: String
        /// Where assets go: a path relative to `dataDirectory` (seed 003's destinationPath) or absolute. Default `assets`.
        public var destination: String
        /// The download rules.
        public var rules: DownloadRules
        /// Files of one asset fetched at once (default 8: on loopback 4, 8 and 16 are within 10 %; more hides latency on real links).
        public var parallelism: Int
        /// Pause between the three attempts of one pass.
        public var retryDelay: Duration
        /// Pause before another pass through the queue for errored assets.
        public var passDelay: Duration
        /// A connection idle this long fails (and is retried).
        public var readTimeout: Duration
        /// Connecting longer than this fails.
        public var connectTimeout: Duration
        /// Seconds that must be cached from the start before `isReadyToPlay`.
        public var readyDuration: Double
        /// How often progress is reported (and other processes' pause/remove/disable noticed).
        public var progressInterval: Duration
        /// A body slower than this fails (retryable): below 1 KiB/s for 30 s by default.
        public var lowSpeed: LowSpeedLimit

        /// Creates a configuration.
        public init(dataDirectory: String, destination: String = "assets", rules: DownloadRules = DownloadRules(), parallelism: Int = 8,
                    retryDelay: Duration = .seconds(1), passDelay: Duration = .seconds(2), readTimeout: Duration = .seconds(30),
                    connectTimeout: Duration = .seconds(10), readyDuration: Double = 10, progressInterval: Duration = .milliseconds(250),
                    lowSpeed: LowSpeedLimit = LowSpeedLimit()) {
            self.lowSpeed = lowSpeed
            self.dataDirectory = dataDirectory
            self.destination = destination
            self.rules = rules
            self.parallelism = parallelism
            self.retryDelay = retryDelay
            self.passDelay = passDelay
            self.readTimeout = readTimeout
            self.connectTimeout = connectTimeout
            self.readyDuration = readyDuration
            self.progressInterval = progressInterval
        }
    }

    /// What ``run()`` left behind.
    public struct RunSummary: Sendable, Equatable {
        /// Assets per state (paused ones under their state).
        public var states: [DownloadState: Int]
        /// Assets paused by the user.
        public var paused: Int
        /// False when downloads are switched off.
        public var enabled: Bool
        /// Set when the index could not be read or written: the run stopped rather than carry on unrecorded.
        public var storageFailure: String?

        /// True when every asset is complete.
        public var allComplete: Bool { storageFailure == nil && states.filter { $0.key != .complete && $0.value > 0 }.isEmpty }
    }

    private var configuration: Configuration
    private let environment: DownloadEnvironment
    private let index: DownloadIndex
    /// The files.
    public nonisolated let store: AssetStore
    private let client: HTTPClient
    private let fetcher: ResourceFetcher
    private var enabled: Bool
    private var current: (id: String, task: Task<(DownloadFailure?, [String]), Never>)?
    private var subscribers: [UUID: AsyncStream<DownloadEvent>.Continuation] = [:]
    private var usedBytes: Int64?
    private var status: EngineStatus = .idle
    /// Assets being removed: nothing may write their rows back meanwhile.
    private var removing: Set<String> = []
    /// The background worker started by ``start(recheckInterval:)``.
    private var worker: Task<Void, Never>?
    /// The worker's wait for work, and whether work came while it was busy.
    private var waiter: CheckedContinuation<Void, Never>?
    private var woken = false
    private var closed = false
    /// The first index failure of the current run: the run stops at once (an unrecorded retry would loop).
    private var storageFailure: DownloadError?

    /// Opens the engine over `configuration.dataDirectory`.
    public init(configuration: Configuration, environment: DownloadEnvironment = DownloadEnvironment()) async throws(DownloadError) {
        self.configuration = configuration
        self.environment = environment
        let root = configuration.destination.hasPrefix("/") ? configuration.destination
            : (configuration.dataDirectory as NSString).appendingPathComponent(configuration.destination)
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw .storage("cannot create \(root)")
        }
        store = AssetStore(root: root)
        index = try await DownloadIndex(path: (configuration.dataDirectory as NSString).appendingPathComponent("downloads.sqlite"))
        var http = HTTPClient.Configuration(timeout: .init(connect: .init(configuration.connectTimeout), read: .init(configuration.readTimeout)))
        http.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(configuration.parallelism, 1))
        http.decompression = .disabled
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: http)
        fetcher = ResourceFetcher(client: client, lowSpeed: configuration.lowSpeed)
        do {
            enabled = try await index.setting("enabled") != "false"
        } catch {
            try? await client.shutdown()
            await index.close()
            throw error
        }
    }

    /// Stops any download and closes the index and the HTTP client. Call it when done; an engine dropped
    /// without it closes them in the background.
    public func close() async {
        guard !closed else { return }
        closed = true
        await stop()
        if let current {
            current.task.cancel()
            _ = await current.task.value
        }
        for continuation in subscribers.values { continuation.finish() }
        subscribers = [:]
        try? await client.shutdown()
        await index.close()
    }

    deinit {
        guard !closed else { return }
        let (client, index) = (client, index)
        Task {
            try? await client.shutdown()
            await index.close()
        }
    }

    // MARK: Events

    /// A stream of every event from now on (seed 003's notifications). Ends when the engine closes.
    public func events() -> AsyncStream<DownloadEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DownloadEvent.self, bufferingPolicy: .bufferingNewest(4096))
        let key = UUID()
        subscribers[key] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(key) }
        }
        return stream
    }

    private func unsubscribe(_ key: UUID) {
        subscribers[key] = nil
    }

    private func emit(_ event: DownloadEvent) {
        for continuation in subscribers.values { continuation.yield(event) }
    }

    private func setStatus(_ new: EngineStatus) {
        guard new != status else { return }
        status = new
        emit(.engineStatusChanged(new))
    }

    // MARK: Queue

    /// Enqueues an asset at the end of the queue. The URL is fetched and planned now, so live streams,
    /// unknown formats, unpermitted MIME types and unreachable manifests are refused here.
    @discardableResult
    public func add(url: String, id: String? = nil, options: DownloadOptions = DownloadOptions(),
                    window: AvailabilityWindow = AvailabilityWindow()) async throws(DownloadError) -> DownloadAsset {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme), parsed.host != nil else {
            throw .invalidArgument("not an http(s) URL: \(url)")
        }
        let id = id ?? String(url.hashValueStable & 0xFFFF_FFFF_FFFF, radix: 16)
        guard AssetStore.isValidID(id) else { throw .invalidArgument("asset IDs are 1-128 of A-Z a-z 0-9 . _ - (got \(id))") }
        guard try await index.find(id) == nil else { throw .duplicateID(id) }
        let plan: DownloadPlan
        do {
            let headers = options.headers ?? [:]
            let probe = try await fetcher.probe(parsed, headers: headers)
            let fetcher = self.fetcher
            plan = try await DownloadPlanner.plan(probe: probe, options: options) { url in try await fetcher.text(url, headers: headers) }
        } catch let error as DownloadError {
            throw error
        } catch let failure as DownloadFailure {
            throw .fetch(failure)
        } catch {
            throw .fetch(.network(url: url, message: String(describing: error)))
        }
        let asset = DownloadAsset(id: id, url: url, state: .queued, isPaused: false, failure: nil, retryCount: 0, window: window,
                                  options: options, plan: plan, addedAt: environment.now(), completedAt: nil, firstPlayAt: nil,
                                  position: try await index.nextPosition())
        try await index.save(asset)
        emit(.queueChanged)
        emit(.stateChanged(assetID: id, state: .queued))
        wake()
        return asset
    }

    /// Every asset in queue order. With `availabilityFilter`, only those inside their window (published, not expired).
    /// Expired assets are deleted from disk first.
    public func assets(availabilityFilter: Bool = false) async throws(DownloadError) -> [DownloadAsset] {
        try await sweepExpired()
        let now = environment.now()
        return try await index.all().filter { !availabilityFilter || ($0.state != .expired && $0.window.isPublished(at: now)) }
    }

    /// One asset (expiring it first if its window closed).
    public func asset(_ id: String) async throws(DownloadError) -> DownloadAsset {
        try await sweepExpired()
        guard let asset = try await index.find(id) else { throw .notFound(id) }
        return asset
    }

    /// The asset's progress, from what is on disk.
    public func progress(_ id: String) async throws(DownloadError) -> DownloadProgress {
        let asset = try await asset(id)
        let scan = store.scan(id, plan: asset.plan)
        return DownloadProgress(assetID: id, plan: asset.plan, complete: scan.complete, bytes: scan.bytes, readyDuration: configuration.readyDuration)
    }

    /// The local path of the asset's entry point (master playlist, MPD, manifest or file), for playback.
    /// Expired and unpublished assets have none.
    public func localPath(_ id: String) async throws(DownloadError) -> String {
        let asset = try await asset(id)
        guard asset.state != .expired else { throw .expired(id) }
        guard asset.window.isPublished(at: environment.now()) else { throw .notFound(id) }
        return store.path(id, asset.plan.mainPath)
    }

    /// Records the first play (for expiry after play). Expired assets cannot be played.
    public func registerPlayStart(_ id: String) async throws(DownloadError) {
        var asset = try await asset(id)
        guard asset.state != .expired else { throw .expired(id) }
        guard asset.window.isPublished(at: environment.now()) else { throw .notFound(id) }
        if asset.firstPlayAt == nil {
            asset.firstPlayAt = environment.now()
            try await index.update(asset)
        }
    }

    /// Pauses one asset (stopping its download if it is the current one). Persists.
    public func pause(_ id: String) async throws(DownloadError) {
        try await update(id) { $0.isPaused = true }
        await stopCurrent(ifItIs: id)
        emit(.queueChanged)
    }

    /// Resumes a paused asset.
    public func resume(_ id: String) async throws(DownloadError) {
        try await update(id) { $0.isPaused = false }
        emit(.queueChanged)
        wake()
    }

    /// Lets a blocked asset be tried again (seed 003's clearRetryCount).
    public func clearRetryCount(_ id: String) async throws(DownloadError) {
        try await update(id) { asset in
            asset.retryCount = 0
            if asset.state == .blocked {
                asset.state = .queued
                asset.failure = nil
            }
        }
        emit(.queueChanged)
        wake()
    }

    /// Removes one asset: stops its download, deletes its files and its index row.
    public func remove(_ id: String) async throws(DownloadError) {
        guard try await index.find(id) != nil else { throw .notFound(id) }
        removing.insert(id)
        defer { removing.remove(id) }
        await stopCurrent(ifItIs: id)
        store.delete(id)
        try await index.delete(id)
        usedBytes = nil
        emit(.queueChanged)
    }

    /// Removes every asset not yet downloaded (the queue); complete ones stay.
    public func flush() async throws(DownloadError) {
        for asset in try await index.all() where asset.state != .complete { try await remove(asset.id) }
    }

    /// Removes every asset.
    public func deleteAll() async throws(DownloadError) {
        for asset in try await index.all() { try await remove(asset.id) }
    }

    /// The global switch; persists across restarts. Switching off stops the current download.
    public func setEnabled(_ value: Bool) async throws(DownloadError) {
        try await index.setSetting("enabled", value ? "true" : "false")
        enabled = value
        if !value, let current { await stopCurrent(ifItIs: current.id) }
        setStatus(value ? .idle : .disabled)
        if value { wake() }
    }

    /// Whether downloading is switched on.
    public var isEnabled: Bool { enabled }

    /// Changes the rules (they apply from the next file).
    public func setRules(_ rules: DownloadRules) {
        configuration.rules = rules
        wake()
    }

    private func update(_ id: String, _ change: (inout DownloadAsset) -> Void) async throws(DownloadError) {
        guard var asset = try await index.find(id) else { throw .notFound(id) }
        let state = asset.state
        change(&asset)
        try await index.update(asset)
        if asset.state != state { emit(.stateChanged(assetID: id, state: asset.state)) }
    }

    private func stopCurrent(ifItIs id: String) async {
        guard let current, current.id == id else { return }
        current.task.cancel()
        _ = await current.task.value
    }

    // MARK: Availability windows

    /// Deletes the files of every asset whose window has closed, marks it expired and reports it.
    @discardableResult
    public func sweepExpired() async throws(DownloadError) -> [String] {
        let now = environment.now()
        var expired: [String] = []
        for var asset in try await index.all() where asset.state != .expired {
            guard let expiry = asset.window.expiry(completedAt: asset.completedAt, firstPlayAt: asset.firstPlayAt), expiry <= now else { continue }
            await stopCurrent(ifItIs: asset.id)
            store.delete(asset.id)
            usedBytes = nil
            asset.state = .expired
            asset.failure = nil
            try await index.update(asset)
            expired.append(asset.id)
            emit(.stateChanged(assetID: asset.id, state: .expired))
        }
        if !expired.isEmpty { emit(.expiredAssetsReset(expired)) }
        return expired
    }

    // MARK: Running the queue

    /// Downloads in the background, as an app's engine does: the queue is worked through now, and again
    /// whenever assets are added or resumed, retries are cleared, downloads are enabled or rules change,
    /// and every `recheckInterval` (free space and networks change on their own). ``stop()`` ends it.
    public func start(recheckInterval: Duration = .seconds(30)) {
        guard worker == nil else { return }
        worker = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                _ = await self.run()
                await self.waitForWork(recheckInterval)
            }
        }
    }

    /// Stops the background worker (the current download stops; its partial files stay).
    public func stop() async {
        guard let worker else { return }
        self.worker = nil
        worker.cancel()
        wake()
        await worker.value
    }

    private func waitForWork(_ interval: Duration) async {
        if woken || Task.isCancelled {
            woken = false
            return
        }
        let timer = Task { [weak self] in
            try? await Task.sleep(for: interval)
            await self?.wake()
        }
        await withCheckedContinuation { waiter = $0 }
        timer.cancel()
        woken = false
    }

    /// Tells the background worker there may be work.
    private func wake() {
        if let waiter {
            self.waiter = nil
            waiter.resume()
        } else {
            woken = true
        }
    }

    /// Works through the queue until nothing more can be done now: every asset is complete, blocked,
    /// paused, held by a rule or expired, or downloads are switched off. Cancelling the calling task
    /// stops the current download (its partial files stay, to be resumed).
    /// An index that cannot be read or written stops the run at once, with a ``DownloadEvent/storageFailed(_:)``
    /// event and ``RunSummary/storageFailure`` set (carrying on would retry without counting, for ever).
    public func run() async -> RunSummary {
        storageFailure = nil
        while !Task.isCancelled {
            guard enabled, let queue = await checked({ () async throws(DownloadError) -> [DownloadAsset] in
                try await sweepExpired()
                return try await index.all()
            }) else { break }
            var errored = false
            for queued in queue where Self.isDownloadable(queued) {
                guard !Task.isCancelled, enabled, storageFailure == nil else { break }
                guard let found = await checked({ () async throws(DownloadError) in try await index.find(queued.id) }),
                      let asset = found, Self.isDownloadable(asset) else { continue }
                if await work(on: asset) { errored = true }
            }
            guard errored, enabled, storageFailure == nil, !Task.isCancelled else { break }
            try? await Task.sleep(for: configuration.passDelay)
        }
        setStatus(enabled ? .idle : .disabled)
        var summary = await summary()
        if let storageFailure { summary.storageFailure = storageFailure.description }
        return summary
    }

    /// Runs an index operation; a failure is recorded (stopping the run), reported, and answers nil.
    private func checked<T>(_ body: () async throws(DownloadError) -> T) async -> T? {
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

    private static func isDownloadable(_ asset: DownloadAsset) -> Bool {
        !asset.isPaused && [.queued, .downloading, .waiting].contains(asset.state)
    }

    /// One asset in one pass: up to three attempts. Returns true when it errored and may be tried in the next pass.
    private func work(on start: DownloadAsset) async -> Bool {
        var asset = start
        guard let hold = await ruleHold(for: asset) else { return false }
        if let hold {
            await record(&asset, state: .waiting, failure: hold)
            return false
        }
        for attempt in 1...3 {
            // Re-read: a pause, removal or switch-off may have come in (from this process or another).
            guard enabled, !Task.isCancelled, storageFailure == nil, !removing.contains(asset.id),
                  let found = await checked({ () async throws(DownloadError) in try await index.find(asset.id) }),
                  let latest = found, Self.isDownloadable(latest), !removing.contains(asset.id) else { return false }
            asset = latest
            guard await record(&asset, state: .downloading, failure: asset.failure) else { return false }
            setStatus(.downloading(asset.id))
            emit(.started(assetID: asset.id))
            let (failure, warnings) = await download(asset)
            for warning in warnings { emit(.warning(assetID: asset.id, message: warning)) }
            guard !removing.contains(asset.id), let found = await checked({ () async throws(DownloadError) in try await index.find(asset.id) }),
                  let latest = found else { return false }  // removed meanwhile, or the index failed
            asset = latest
            guard let failure else {
                asset.completedAt = environment.now()
                await record(&asset, state: .complete, failure: nil)
                emit(.finished(assetID: asset.id))
                return false
            }
            switch failure {
            case .cancelled:
                await record(&asset, state: .queued, failure: asset.failure)
                return false
            case _ where failure.isRuleLimit:
                await record(&asset, state: .waiting, failure: failure)
                return false
            case _ where failure.isFatal:
                emit(.error(assetID: asset.id, failure: failure, willRetry: false))
                await record(&asset, state: .blocked, failure: failure)
                return false
            default:
                let lastOfPass = attempt == 3
                if lastOfPass { asset.retryCount += 1 }
                let blocked = lastOfPass && asset.retryCount >= 3
                emit(.error(assetID: asset.id, failure: failure, willRetry: !blocked))
                if lastOfPass {
                    await record(&asset, state: blocked ? .blocked : .queued, failure: failure)
                    return !blocked
                }
                guard await record(&asset, state: .downloading, failure: failure) else { return false }
                try? await Task.sleep(for: configuration.retryDelay)
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

    /// The rule that keeps `asset` from starting now: `.some(nil)` when none does, nil when the index failed.
    private func ruleHold(for asset: DownloadAsset) async -> DownloadFailure?? {
        let rules = configuration.rules
        switch environment.networkType() {
        case .none: return .networkUnavailable(.none)
        case .cellular where !rules.downloadOverCellular: return .networkUnavailable(.cellular)
        default: break
        }
        guard let all = await checked({ () async throws(DownloadError) in try await index.all() }) else { return nil }
        let complete = all.filter { $0.state == .complete && $0.id != asset.id }.count
        if complete >= rules.maxDownloadedAssets { return .maxDownloadedAssets(rules.maxDownloadedAssets) }
        let used = currentUsage()
        if used >= rules.maxStorageAllowed { return .storageLimit(usedBytes: used, limit: rules.maxStorageAllowed) }
        if let free = environment.freeSpace(store.root), free < rules.headroom { return .headroom(freeBytes: free, headroom: rules.headroom) }
        return .some(nil)
    }

    private func currentUsage() -> Int64 {
        if let usedBytes { return usedBytes }
        let used = store.usage()
        usedBytes = used
        return used
    }

    /// One attempt at an asset: the manifests, then every missing file, several at a time.
    private func download(_ asset: DownloadAsset) async -> (DownloadFailure?, [String]) {
        do {
            try store.writeManifests(asset.id, plan: asset.plan)
            try store.makeDirectories(asset.id, plan: asset.plan)
        } catch {
            return (error, [])
        }
        let scan = store.scan(asset.id, plan: asset.plan)
        let live = LiveProgress(scan: scan)
        let missing = scan.complete.indices.filter { !scan.complete[$0] }
        let root = store.root, environment = environment
        let budget = DownloadBudget(used: currentUsage(), rules: configuration.rules, freeSpace: { environment.freeSpace(root) })
        let (fetcher, store, parallelism) = (fetcher, store, max(configuration.parallelism, 1))
        let task = Task {
            await Self.fetchAll(asset.plan, missing: missing, assetID: asset.id, fetcher: fetcher, store: store,
                                headers: asset.options.headers ?? [:], budget: budget, progress: live, parallelism: parallelism)
        }
        current = (asset.id, task)
        let interval = configuration.progressInterval
        let ticker = Task { [weak self] in
            var ticks = 0
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                ticks += 1
                await self?.tick(asset, live: live, checkIndex: ticks % 4 == 0)
            }
        }
        let result = await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
        ticker.cancel()
        current = nil
        usedBytes = budget.usedBytes
        report(asset, live: live)
        return result
    }

    private func report(_ asset: DownloadAsset, live: LiveProgress) {
        let snapshot = live.snapshot
        emit(.progress(DownloadProgress(assetID: asset.id, plan: asset.plan, complete: snapshot.complete, bytes: snapshot.bytes,
                                        readyDuration: configuration.readyDuration)))
    }

    /// Reports progress; now and then notices a pause, removal or switch-off made by another process.
    private func tick(_ asset: DownloadAsset, live: LiveProgress, checkIndex: Bool) async {
        guard let current, current.id == asset.id else { return }
        report(asset, live: live)
        guard checkIndex else { return }
        let latest = try? await index.find(asset.id)
        let switchedOff = (try? await index.setting("enabled")) == "false"
        if latest == nil || latest?.isPaused == true || switchedOff {
            if switchedOff { enabled = false }
            current.task.cancel()
        }
    }

    /// Fetches `missing` files, `parallelism` at a time, in plan order. Stops at the first failure
    /// (the most serious one wins: fatal, then a rule, then any other, then cancellation).
    private static func fetchAll(_ plan: DownloadPlan, missing: [Int], assetID: String, fetcher: ResourceFetcher, store: AssetStore,
                                 headers: [String: String], budget: DownloadBudget, progress: LiveProgress,
                                 parallelism: Int) async -> (DownloadFailure?, [String]) {
        await withTaskGroup(of: Result<String?, DownloadFailure>.self) { group in
            var next = missing.startIndex
            var running = 0
            var failure: DownloadFailure?
            var warnings: [String] = []
            func rank(_ failure: DownloadFailure) -> Int {
                failure.isFatal ? 3 : failure.isRuleLimit ? 2 : failure == .cancelled ? 0 : 1
            }
            while true {
                while failure == nil, running < parallelism, next < missing.endIndex, !Task.isCancelled {
                    let index = missing[next]
                    next += 1
                    running += 1
                    group.addTask {
                        do {
                            return .success(try await fetcher.fetch(plan.resources[index], index: index, assetID: assetID, store: store, headers: headers,
                                                                    budget: budget, progress: progress))
                        } catch {
                            return .failure(ResourceFetcher.failure(error, url: plan.resources[index].url))
                        }
                    }
                }
                guard let result = await group.next() else { break }
                running -= 1
                switch result {
                case let .success(warning):
                    if let warning { warnings.append(warning) }
                case let .failure(error):
                    if failure.map({ rank(error) > rank($0) }) ?? true { failure = error }
                    group.cancelAll()
                }
            }
            if failure == nil, next < missing.endIndex || Task.isCancelled { failure = .cancelled }
            return (failure, warnings)
        }
    }
}
