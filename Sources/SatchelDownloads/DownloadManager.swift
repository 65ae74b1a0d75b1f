import Foundation
import SatchelStreams
import Logging
import SatchelBytes
import SatchelSystem

/// The download engine's coordinator: one queue, worked through in order, one asset at a time with several
/// of its files in parallel, under the download rules and availability windows, reporting through
/// ``events()``. It owns the device's download store: nothing else writes there (the playback proxy's files from the
/// origin come in through ``keepFetched(_:path:bytes:)``).
///
/// The actor holds the public API and the roles; each role is a type of its own, holding its own state and running on
/// the actor's isolation: `DownloadQueue` (the queue and every change to it, the switch, the assets being removed),
/// `DownloadRunLoop` (passes, attempts, the background loop, the run's storage failure), `DownloadReads` (what apps
/// and the proxy read, and the proxy's door into the store) and `DownloadUpkeep` (fresh credentials, damaged records,
/// upgrades); they share the attempt in progress (`AttemptSlot`), the storage usage and rules (`StorageUsage`) and
/// the reporter, and an `AttemptWatch` watches each attempt as it runs. The queue's rules are the pure
/// `QueuePolicy`, an attempt is run by the `DownloadWorker`, events go through the `DownloadEventHub`, and the
/// index is an injected seam (`DownloadIndexing`; the fetcher and the store are seams inside the package), with
/// ``DownloadStep``s (a license, a permission) before every attempt. State lives in the index and the store, so the
/// process may stop at any instant and pick up where the files end.
public actor DownloadManager {
    let parts: EngineParts
    let reporter: EngineReporter
    let attempt = AttemptSlot()
    let usage: StorageUsage
    let queue: DownloadQueue
    let reads: DownloadReads
    let upkeep: DownloadUpkeep
    let runLoop: DownloadRunLoop
    /// The files. Only the engine writes there; the playback proxy reads an asset's folder (by name below it, no link
    /// followed) and hands what it fetched to ``keepFetched(_:path:bytes:)``.
    package nonisolated let store: any AssetStoring
    private nonisolated let hub = DownloadEventHub()

    /// Opens the engine over `configuration.dataDirectory` with the real index (SQLite) or the one given, its HTTP
    /// fetcher and its store (the files, under the configuration's asset directory); `steps` run before every attempt.
    public init(configuration: Configuration, environment: DownloadEnvironment = DownloadEnvironment(),
                index: (any DownloadIndexing)? = nil, steps: [any DownloadStep] = []) async throws(DownloadError) {
        try await self.init(configuration: configuration, environment: environment, index: index, fetcher: nil, store: nil, steps: steps)
    }

    /// The same with a fetcher and a store of the package's own (tests).
    package init(configuration: Configuration, environment: DownloadEnvironment = DownloadEnvironment(),
                 index: (any DownloadIndexing)? = nil, fetcher: (any ResourceFetching)?, store: (any AssetStoring)?,
                 steps: [any DownloadStep] = []) async throws(DownloadError) {
        let root = configuration.assetRoot
        do {
            // Owner only: the data directory (tokens, licenses) and the assets, wherever they are.
            try PrivateFiles.folder(configuration.dataDirectory)
            try PrivateFiles.folder(root)
        } catch {
            throw .storage("cannot create \(root) (owner only): \(error.description)")
        }
        let store = store ?? AssetStore(root: root)
        let opened: any DownloadIndexing
        if let index {
            opened = index
        } else {
            opened = try await DownloadIndex(path: (configuration.dataDirectory as NSString).appendingPathComponent("downloads.sqlite"),
                                             secrets: configuration.secrets, logger: configuration.logger)
        }
        let index = opened
        let fetcher = fetcher ?? ResourceFetcher(connectTimeout: configuration.connectTimeout, readTimeout: configuration.readTimeout,
                                                 parallelism: max(configuration.maxParallelism, configuration.parallelism),
                                                 lowSpeed: configuration.lowSpeed)
        let enabled: Bool
        do {
            enabled = try await index.setting("enabled") != "false"
        } catch {
            await fetcher.shutdown()
            await index.close()
            throw error
        }
        let parts = EngineParts(index: index, store: store, fetcher: fetcher, steps: steps, environment: environment, configuration: configuration)
        self.parts = parts
        self.store = store
        reporter = EngineReporter(sink: EventSink(hub: hub, logger: configuration.logger))
        usage = StorageUsage(store: store, environment: environment, rules: configuration.rules)
        queue = DownloadQueue(parts: parts, reporter: reporter, attempt: attempt, usage: usage, enabled: enabled)
        reads = DownloadReads(parts: parts, reporter: reporter, queue: queue, attempt: attempt, usage: usage)
        upkeep = DownloadUpkeep(parts: parts, reporter: reporter, queue: queue, reads: reads)
        runLoop = DownloadRunLoop(parts: parts, reporter: reporter, queue: queue, reads: reads, upkeep: upkeep, attempt: attempt, usage: usage)
    }

    /// Stops any download and closes the index and the HTTP client. Call it when done; an engine dropped
    /// without it has its index and client close themselves.
    public func close() async {
        guard !runLoop.closed else { return }
        runLoop.close()
        await stop()
        await attempt.stop()
        hub.finish()
        await parts.fetcher.shutdown()
        await parts.index.close()
    }

    // MARK: Events

    /// A stream of every event from now on (the notifications). Ends when the engine closes.
    public nonisolated func events() -> AsyncStream<DownloadEvent> {
        hub.events()
    }

    /// Tells the background loop there may be work.
    func wake() {
        queue.wake()
    }

    // MARK: The queue (``DownloadQueue``)

    /// Enqueues an asset at the end of the queue. The URL is fetched and planned now, so live streams,
    /// unknown formats, unpermitted MIME types and unreachable manifests are refused here. Without `id`, the asset
    /// is named from its URL (`DownloadNaming`). `paused`: made, but not downloaded until ``resume(_:)``.
    @discardableResult
    public func add(url: String, id: String? = nil, options: DownloadOptions = DownloadOptions(),
                    window: AvailabilityWindow = AvailabilityWindow(), paused: Bool = false) async throws(DownloadError) -> DownloadAsset {
        try await queue.add(url: url, id: id, options: options, window: window, paused: paused)
    }

    /// Pauses one asset (stopping its download if it is the current one). Persists.
    public func pause(_ id: String) async throws(DownloadError) { try await queue.pause(id) }

    /// Moves an asset to place `index` of the queue (0: first; past the end: last). Persists.
    public func move(_ id: String, to index: Int) async throws(DownloadError) { try await queue.move(id, to: index) }

    /// Changes an asset's availability window, applied at once (an asset past its new end expires now). Persists.
    public func setWindow(_ id: String, _ window: AvailabilityWindow) async throws(DownloadError) { try await queue.setWindow(id, window) }

    /// Resumes a paused asset.
    public func resume(_ id: String) async throws(DownloadError) { try await queue.resume(id) }

    /// Lets a blocked asset be tried again.
    public func clearRetryCount(_ id: String) async throws(DownloadError) { try await queue.clearRetryCount(id) }

    /// Removes one asset: stops its download, deletes its files and its index row.
    /// A damaged record (``damagedAssets()``) is removed the same way.
    public func remove(_ id: String) async throws(DownloadError) { try await queue.remove(id) }

    /// Puts one asset back as it was before it downloaded: its files deleted (the plan kept), paused, queued, without
    /// completion or play dates, failure or retries; it stays in the queue with its options and window until resumed
    /// or removed. The steps hear of it as of a removal (its license is released).
    public func reset(_ id: String) async throws(DownloadError) { try await queue.reset(id) }

    /// Removes every asset not yet downloaded (the queue); complete ones stay.
    public func flush() async throws(DownloadError) {
        try await queue.removeAll(keepingComplete: true)
    }

    /// Removes every asset.
    public func deleteAll() async throws(DownloadError) {
        try await queue.removeAll(keepingComplete: false)
    }

    /// The global switch; persists across restarts. Switching off stops the current download.
    public func setEnabled(_ value: Bool) async throws(DownloadError) { try await queue.setEnabled(value) }

    /// Whether downloading is switched on.
    public var isEnabled: Bool { queue.enabled }

    /// Changes the rules (they apply from the next file).
    public func setRules(_ rules: DownloadRules) {
        usage.rules = rules
        wake()
    }

    /// Deletes the files of every asset whose window has closed, marks it expired and reports it.
    @discardableResult
    public func sweepExpired() async throws(DownloadError) -> [String] {
        try await queue.sweepExpired()
    }

    // MARK: Reads (``DownloadReads``)

    /// Every asset in queue order, as of now. An asset found past its window is expired here and then: its files
    /// are deleted, it is listed as expired. With `availabilityFilter`, only those inside their window (published,
    /// not expired).
    public func assets(availabilityFilter: Bool = false) async throws(DownloadError) -> [DownloadAsset] {
        try await reads.assets(availabilityFilter: availabilityFilter)
    }

    /// One asset, as of now (see ``assets(availabilityFilter:)``).
    public func asset(_ id: String) async throws(DownloadError) -> DownloadAsset { try await reads.asset(id) }

    /// The asset's progress, from what is on disk.
    public func progress(_ id: String) async throws(DownloadError) -> DownloadProgress { try await reads.progress(id) }

    /// The local path of the asset's entry point (master playlist, MPD, manifest or file). Expired and unpublished
    /// assets have none. Players go through the playback proxy, never to the files.
    package func localPath(_ id: String) async throws(DownloadError) -> String {
        store.path(id, try await reads.playable(id).plan.mainPath)
    }

    /// The asset's folder opened read-only, for the playback proxy to open its files by name below it (no link
    /// followed, the folder itself included); nil when it is not there (nothing downloaded yet, or removed).
    package nonisolated func openFolder(_ id: String) throws(DownloadError) -> ConfinedFolder? {
        guard AssetStore.isValidID(id) else { throw .invalidArgument("asset IDs are 1-128 of A-Z a-z 0-9 . _ - (got \(id))") }
        do { return try ConfinedFolder.openIfPresent(store.root + "/" + id) } catch { throw .storage("cannot open the folder of \(id): \(error)") }
    }

    /// Records the first play (for expiry after play). Expired assets cannot be played.
    public func registerPlayStart(_ id: String) async throws(DownloadError) { try await reads.registerPlayStart(id) }

    /// Keeps a file the playback proxy fetched whole from the origin while an asset plays (download
    /// and play). The engine owns the device's store: this is the one door through which anything but its own
    /// attempts writes there — under the storage rules (`maxStorageAllowed`, headroom), counted in the usage, below the
    /// asset's folder with no link followed, only for a file of the asset's plan not yet on disk, and reported
    /// (``DownloadEvent/fileKept(assetID:path:bytes:)``). A file of a complete asset is not needed; one of an expired
    /// or removed asset is refused.
    public func keepFetched(_ id: String, path: String, bytes: [UInt8]) async throws(DownloadError) {
        try await reads.keepFetched(id, path: path, bytes: bytes)
    }

    /// Keeps bytes a player was sent from the origin at `offset` of a single file being downloaded: appended to its
    /// partial download when they continue it (and come from the same version of the file), under the storage
    /// rules; otherwise — a jump ahead, the engine downloading it now — left alone.
    public func extendPart(_ id: String, path: String, offset: Int64, bytes: [UInt8], total: Int64?) async throws(DownloadError) {
        try await reads.extendPart(id, path: path, offset: offset, bytes: bytes, total: total)
    }

    // MARK: Running (``DownloadRunLoop``)

    /// Downloads in the background, as an app's engine does: ``runContinuously(recheckInterval:)`` in a task
    /// this engine holds, so ``stop()`` (or ``close()``) ends it and waits for it.
    public func start(recheckInterval: Duration = .seconds(30)) {
        guard runLoop.background == nil else { return }
        let network = parts.environment.network
        runLoop.hold(Task {
            // A change of network wakes the loop: a download held off a metered network resumes when it changes back.
            let watcher = Task { [weak self] in
                for await _ in network.changes() { await self?.wake() }
            }
            await runContinuously(recheckInterval: recheckInterval)
            watcher.cancel()
        })
    }

    /// Stops the background loop (the current download stops; its partial files stay).
    public func stop() async { await runLoop.stop() }

    /// Works through the queue now, and again whenever assets are added or resumed, retries are cleared,
    /// downloads are enabled or rules change, and every `recheckInterval` (free space and networks change on
    /// their own), until the calling task is cancelled. For callers that own their tasks; ``start(recheckInterval:)``
    /// runs it in the background.
    public func runContinuously(recheckInterval: Duration = .seconds(30)) async {
        await runLoop.runContinuously(recheckInterval: recheckInterval)
    }

    /// Works through the queue until nothing more can be done now: every asset is complete, blocked,
    /// paused, held by a rule or expired, or downloads are switched off. Cancelling the calling task
    /// stops the current download (its partial files stay, to be resumed).
    /// An index that cannot be read or written stops the run at once, with a ``DownloadEvent/storageFailed(_:)``
    /// event and ``RunSummary/storageFailure`` set (carrying on would retry without counting, for ever).
    public func run() async -> RunSummary { await runLoop.run() }

    /// The states of every asset.
    public func summary() async -> RunSummary { await runLoop.summary() }

    // MARK: Upkeep (``DownloadUpkeep``)

    /// Hands the engine a fresh URL and/or request headers for an asset, typically after
    /// ``DownloadEvent/authorizationRequired(assetID:status:)`` (a signed URL or a token expired). The files
    /// already on disk stay and the asset resumes from them: every file URL on the old URL's host under its
    /// folder moves to the same place under the new URL's folder, and a file URL that carried the old URL's
    /// query (a CDN token) carries the new one. `headers` (when given) replace the asset's headers. The retry
    /// count is cleared and a blocked asset is queued again.
    public func updateURL(_ id: String, url: String? = nil, headers: [String: String]? = nil) async throws(DownloadError) {
        try await upkeep.updateURL(id, url: url, headers: headers)
    }

    /// Hands the engine a fresh entitlement token for an asset added with a license request (``LicenseRequest``), when
    /// the one it was added with expired: kept sealed like the first, its retries cleared, a blocked asset queued again.
    public func updateLicenseToken(_ id: String, token: String) async throws(DownloadError) {
        try await upkeep.updateLicenseToken(id, token: token)
    }

    /// The index's records that cannot be read. They are not in ``assets(availabilityFilter:)``; ``remove(_:)``
    /// deletes one (row and files) when the application decides to.
    public func damagedAssets() async throws(DownloadError) -> [DamagedRecord] { try await parts.index.damaged() }

    /// Brings a data store written by an earlier version to the current layout, once per engine (the first
    /// ``run()`` does it): plans kept in the index (inline in a record, or in the plan table) move into their
    /// asset's folder, each written there before the index lets go of it, so an asset is readable and playable
    /// before, during and after. Emits ``DownloadEvent/dataStoreUpgradeBegan`` and
    /// ``DownloadEvent/dataStoreUpgradeFinished(upgraded:)`` when there is anything to do.
    public func upgradeDataStore() async throws(DownloadError) { try await upkeep.upgradeDataStore() }
}
