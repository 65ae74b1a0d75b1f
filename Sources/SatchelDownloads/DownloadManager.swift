import Foundation
import SatchelStreams
import Logging
import SatchelBytes
import SatchelSystem

/// The download engine's coordinator: one queue, worked through in order, one asset at a time with several
/// of its files in parallel, under the download rules and availability windows, reporting through
/// ``events()``. It only coordinates: the queue's rules are the pure ``QueuePolicy``, an attempt is run by
/// the ``DownloadWorker`` in a task group owned by ``run()``, events go through the ``DownloadEventHub``,
/// and the index, the fetcher and the store are injected seams (``DownloadIndexing``, ``ResourceFetching``,
/// ``AssetStoring``), with ``DownloadStep``s (a license, a permission) before every attempt. State lives in
/// the index and the store, so the process may stop at any instant and pick up where the files end.
public actor DownloadManager {
    /// How the engine works.
    public struct Configuration: Sendable {
        /// The engine's directory: `downloads.sqlite` and the assets directory live here.
        public var dataDirectory: String
        /// Where assets go: a path relative to `dataDirectory` (seed 003's destinationPath) or absolute. Default `assets`.
        public var destination: String
        /// The download rules.
        public var rules: DownloadRules
        /// Files of one asset fetched at once when an attempt begins (default 16: on an emulated 100 Mbit/s link with a
        /// 150 ms round trip, 8 is 18 % slower than 16, and 32 gains nothing; see `SatchelBenchmarks link`).
        public var parallelism: Int
        /// The most files at once an attempt grows to while more connections bring more throughput (default 48;
        /// ``AdaptiveParallelism``). Equal to `parallelism`: fixed.
        public var maxParallelism: Int
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
        /// Where the engine logs its decisions: why an asset waits, each attempt, each retry and its reason.
        /// URLs appear without their query strings; headers and tokens never appear.
        public var logger: Logger
        /// Seals the secrets kept in the index (header values, entitlement tokens) with the device's key
        /// (``SecretSealing``; the agent's `DeviceSecretBox`); nil: they are stored as given, in an owner-only file.
        public var secrets: (any SecretSealing)?

        /// Creates a configuration.
        public init(dataDirectory: String, destination: String = "assets", rules: DownloadRules = DownloadRules(), parallelism: Int = 16,
                    maxParallelism: Int = 48,
                    retryDelay: Duration = .seconds(1), passDelay: Duration = .seconds(2), readTimeout: Duration = .seconds(30),
                    connectTimeout: Duration = .seconds(10), readyDuration: Double = 10, progressInterval: Duration = .milliseconds(250),
                    lowSpeed: LowSpeedLimit = LowSpeedLimit(), logger: Logger = Logger(label: "satchel.downloads")) {
            self.lowSpeed = lowSpeed
            self.logger = logger
            self.dataDirectory = dataDirectory
            self.destination = destination
            self.rules = rules
            self.parallelism = parallelism
            self.maxParallelism = max(maxParallelism, parallelism)
            self.retryDelay = retryDelay
            self.passDelay = passDelay
            self.readTimeout = readTimeout
            self.connectTimeout = connectTimeout
            self.readyDuration = readyDuration
            self.progressInterval = progressInterval
        }

        /// The assets' root directory.
        var assetRoot: String {
            destination.hasPrefix("/") ? destination : (dataDirectory as NSString).appendingPathComponent(destination)
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

    var configuration: Configuration
    let environment: DownloadEnvironment
    let index: any DownloadIndexing
    /// The files.
    public nonisolated let store: any AssetStoring
    let fetcher: any ResourceFetching
    let steps: [any DownloadStep]
    let hub = DownloadEventHub()
    var enabled: Bool
    /// The attempt in progress: its asset, the signal that stops it, the signal it raises when it has ended.
    var current: (id: String, stop: StopSignal, ended: StopSignal)?
    var usedBytes: Int64?
    var status: EngineStatus = .idle
    /// Assets being removed: nothing may write their rows back meanwhile.
    var removing: Set<String> = []
    /// The background loop started by ``start(recheckInterval:)``, held so ``stop()`` can end and await it.
    var background: Task<Void, Never>?
    /// Raised when work may have come in while the background loop waits.
    var wakeUp = StopSignal()
    var closed = false
    /// The first index failure of the current run: the run stops at once (an unrecorded retry would loop).
    var storageFailure: DownloadError?
    /// Damaged records already reported (an event each, once per engine).
    var reportedDamage: Set<String> = []
    /// True once ``upgradeDataStore()`` has run.
    var upgraded = false

    /// Opens the engine over `configuration.dataDirectory` with the real index (SQLite), fetcher (HTTP) and
    /// store (files), or the ones given; `steps` run before every attempt.
    public init(configuration: Configuration, environment: DownloadEnvironment = DownloadEnvironment(),
                index: (any DownloadIndexing)? = nil, fetcher: (any ResourceFetching)? = nil, store: (any AssetStoring)? = nil,
                steps: [any DownloadStep] = []) async throws(DownloadError) {
        self.configuration = configuration
        self.environment = environment
        self.steps = steps
        let root = configuration.assetRoot
        do {
            // Owner only: the data directory (tokens, licenses) and the assets, wherever they are.
            try PrivateFiles.folder(configuration.dataDirectory)
            try PrivateFiles.folder(root)
        } catch {
            throw .storage("cannot create \(root) (owner only): \(error.description)")
        }
        self.store = store ?? AssetStore(root: root)
        let opened: any DownloadIndexing
        if let index {
            opened = index
        } else {
            opened = try await DownloadIndex(path: (configuration.dataDirectory as NSString).appendingPathComponent("downloads.sqlite"),
                                             secrets: configuration.secrets, logger: configuration.logger)
        }
        let index = opened
        self.index = index
        let fetcher = fetcher ?? ResourceFetcher(connectTimeout: configuration.connectTimeout, readTimeout: configuration.readTimeout,
                                                 parallelism: max(configuration.maxParallelism, configuration.parallelism),
                                                 lowSpeed: configuration.lowSpeed)
        self.fetcher = fetcher
        do {
            enabled = try await index.setting("enabled") != "false"
        } catch {
            await fetcher.shutdown()
            await index.close()
            throw error
        }
    }

    /// Stops any download and closes the index and the HTTP client. Call it when done; an engine dropped
    /// without it has its index and client close themselves.
    public func close() async {
        guard !closed else { return }
        closed = true
        await stop()
        if let current {
            current.stop.raise()
            await current.ended.wait()
        }
        hub.finish()
        await fetcher.shutdown()
        await index.close()
    }

    // MARK: Events

    /// A stream of every event from now on (seed 003's notifications). Ends when the engine closes.
    public nonisolated func events() -> AsyncStream<DownloadEvent> {
        hub.events()
    }

    func emit(_ event: DownloadEvent) {
        EngineLog.log(event, to: configuration.logger)
        hub.emit(event)
    }

    func setStatus(_ new: EngineStatus) {
        guard new != status else { return }
        status = new
        emit(.engineStatusChanged(new))
    }

    // MARK: Queue

    /// Enqueues an asset at the end of the queue. The URL is fetched and planned now, so live streams,
    /// unknown formats, unpermitted MIME types and unreachable manifests are refused here. Without `id`, the asset
    /// is named from its URL (``DownloadNaming``).
    @discardableResult
    public func add(url: String, id: String? = nil, options: DownloadOptions = DownloadOptions(),
                    window: AvailabilityWindow = AvailabilityWindow()) async throws(DownloadError) -> DownloadAsset {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme), parsed.host != nil else {
            throw .invalidArgument("not an http(s) URL: \(url)")
        }
        var named = id
        if named == nil {
            // A readable ID from the URL (its playlist's or folder's name), unique among the assets.
            let existing = Set(try await index.all().map(\.id) + (try await index.damaged()).map(\.id))
            named = DownloadNaming.id(for: parsed, taken: existing.contains)
        }
        guard let id = named else { throw .invalidArgument("no asset ID") }
        guard AssetStore.isValidID(id) else { throw .invalidArgument("asset IDs are 1-128 of A-Z a-z 0-9 . _ - (got \(id))") }
        guard try await index.find(id) == nil else { throw .duplicateID(id) }
        guard try await !index.damaged().contains(where: { $0.id == id }) else { throw .duplicateID(id) }
        let plan: DownloadPlan
        do {
            let headers = options.headers ?? [:]
            let probe = try await fetcher.probe(parsed, headers: headers)
            let fetcher = self.fetcher
            plan = try await DownloadPlanner.plan(probe: probe, options: options.planOptions) { url in try await fetcher.text(url, headers: headers) }
        } catch let error as DownloadError {
            throw error
        } catch let error as StreamError {
            throw DownloadError(error)
        } catch let failure as DownloadFailure {
            throw .fetch(failure)
        } catch {
            throw .fetch(.network(url: url, message: String(describing: error)))
        }
        let asset = DownloadAsset(id: id, url: url, state: .queued, isPaused: false, failure: nil, retryCount: 0, window: window,
                                  options: options, plan: plan, addedAt: environment.clock.now, completedAt: nil, firstPlayAt: nil,
                                  position: try await index.nextPosition())
        // The plan goes into the asset's folder first (crash-safe); the index row that makes the asset exist follows.
        do { try store.writePlan(id, plan) } catch { throw .storage(error.description) }
        do {
            try await index.save(asset)
        } catch {
            try? store.delete(id, keepingPlan: false)  // the row was never written: nothing may stay behind
            throw error
        }
        emit(.queueChanged)
        emit(.stateChanged(assetID: id, state: .queued))
        wake()
        return asset
    }

    /// Every asset in queue order, as of now: an asset whose window has closed reads as expired (its files
    /// are deleted by the next run or ``sweepExpired()``; reading never deletes). With `availabilityFilter`,
    /// only those inside their window (published, not expired).
    public func assets(availabilityFilter: Bool = false) async throws(DownloadError) -> [DownloadAsset] {
        let now = environment.clock.now
        var assets: [DownloadAsset] = []
        for asset in try await index.all() {
            let shown = QueuePolicy.presented(asset, at: now)
            guard !availabilityFilter || (shown.state != .expired && shown.window.isPublished(at: now)) else { continue }
            assets.append(try withPlan(shown))
        }
        return assets
    }

    /// One asset, as of now (see ``assets(availabilityFilter:)``).
    public func asset(_ id: String) async throws(DownloadError) -> DownloadAsset {
        guard let asset = try await index.find(id) else { throw .notFound(id) }
        return try withPlan(QueuePolicy.presented(asset, at: environment.clock.now))
    }

    /// The asset with its plan, read from its folder (the index holds metadata only).
    func withPlan(_ asset: DownloadAsset) throws(DownloadError) -> DownloadAsset {
        guard asset.plan.isPlaceholder else { return asset }
        var full = asset
        do {
            if let plan = try store.readPlan(asset.id) { full.plan = plan }
        } catch {
            throw .storage("asset \(asset.id): \(error.description)")
        }
        return full
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
        let asset = try await playable(id)
        return store.path(id, asset.plan.mainPath)
    }

    /// Records the first play (for expiry after play). Expired assets cannot be played.
    public func registerPlayStart(_ id: String) async throws(DownloadError) {
        var asset = try await playable(id)
        if asset.firstPlayAt == nil {
            asset.firstPlayAt = environment.clock.now
            try await index.update(asset)
        }
    }

    private func playable(_ id: String) async throws(DownloadError) -> DownloadAsset {
        let asset = try await asset(id)
        guard asset.state != .expired else { throw .expired(id) }
        guard asset.window.isPublished(at: environment.clock.now) else { throw .notFound(id) }
        return asset
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
    /// A damaged record (``damagedAssets()``) is removed the same way.
    public func remove(_ id: String) async throws(DownloadError) {
        let found = try await index.find(id)
        if found == nil {
            guard try await index.damaged().contains(where: { $0.id == id }) else { throw .notFound(id) }
        }
        removing.insert(id)
        defer { removing.remove(id) }
        await stopCurrent(ifItIs: id)
        do { try store.delete(id, keepingPlan: false) } catch { throw .storage(error.description) }
        try await index.delete(id)
        if let found { for step in steps { await step.removed(found) } }
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

    /// Stops the attempt at `id`, if one is in progress, and waits until it has ended.
    func stopCurrent(ifItIs id: String) async {
        guard let current, current.id == id else { return }
        current.stop.raise()
        await current.ended.wait()
    }

    // MARK: Availability windows

    /// Deletes the files of every asset whose window has closed, marks it expired and reports it.
    @discardableResult
    public func sweepExpired() async throws(DownloadError) -> [String] {
        let now = environment.clock.now
        return try await expire(try await index.all().filter { QueuePolicy.hasExpired($0, at: now) }.map(\.id))
    }

    /// Expires `ids`: stops, deletes files, marks expired, reports.
    func expire(_ ids: [String]) async throws(DownloadError) -> [String] {
        var expired: [String] = []
        for id in ids {
            guard var asset = try await index.find(id), asset.state != .expired else { continue }
            await stopCurrent(ifItIs: id)
            do { try store.delete(id, keepingPlan: true) } catch { throw .storage(error.description) }
            usedBytes = nil
            asset.state = .expired
            asset.failure = nil
            try await index.update(asset)
            expired.append(id)
            emit(.stateChanged(assetID: id, state: .expired))
        }
        if !expired.isEmpty { emit(.expiredAssetsReset(expired)) }
        return expired
    }
}
