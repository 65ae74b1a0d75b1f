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
/// The actor holds the state and the public API; the work is split by role, each role a type of its own running on
/// the actor's isolation: `DownloadQueue` (the queue and every change to it), `DownloadRunLoop` (passes, attempts,
/// progress, the background loop), `DownloadReads` (what apps and the proxy read, and the proxy's door into the
/// store) and `DownloadUpkeep` (fresh credentials, damaged records, upgrades). The queue's rules are the pure
/// `QueuePolicy`, an attempt is run by the `DownloadWorker`, events go through the `DownloadEventHub`, and the
/// index is an injected seam (`DownloadIndexing`; the fetcher and the store are seams inside the package), with
/// ``DownloadStep``s (a license, a permission) before every attempt. State lives in the index and the store, so the
/// process may stop at any instant and pick up where the files end.
public actor DownloadManager {
    var configuration: Configuration
    let environment: DownloadEnvironment
    let index: any DownloadIndexing
    /// The files. Only the engine writes there; the playback proxy reads an asset's folder (by name below it, no link
    /// followed) and hands what it fetched to ``keepFetched(_:path:bytes:)``.
    package nonisolated let store: any AssetStoring
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
    /// The network rule that stopped the attempt in progress (a switch to a metered network mid-download).
    var networkHold: DownloadFailure?
    /// Whether the log has said that the network's type cannot be detected.
    var toldUnknownNetwork = false
    /// The first index failure of the current run: the run stops at once (an unrecorded retry would loop).
    var storageFailure: DownloadError?
    /// Damaged records already reported (an event each, once per engine).
    var reportedDamage: Set<String> = []
    /// True once ``upgradeDataStore()`` has run.
    var upgraded = false

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

    /// A stream of every event from now on (the notifications). Ends when the engine closes.
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

    /// Tells the background loop there may be work.
    func wake() {
        wakeUp.raise()
    }

    // MARK: The queue (``DownloadQueue``)

    /// Enqueues an asset at the end of the queue. The URL is fetched and planned now, so live streams,
    /// unknown formats, unpermitted MIME types and unreachable manifests are refused here. Without `id`, the asset
    /// is named from its URL (`DownloadNaming`). `paused`: made, but not downloaded until ``resume(_:)``.
    @discardableResult
    public func add(url: String, id: String? = nil, options: DownloadOptions = DownloadOptions(),
                    window: AvailabilityWindow = AvailabilityWindow(), paused: Bool = false) async throws(DownloadError) -> DownloadAsset {
        try await DownloadQueue.add(self, url: url, id: id, options: options, window: window, paused: paused)
    }

    /// Pauses one asset (stopping its download if it is the current one). Persists.
    public func pause(_ id: String) async throws(DownloadError) { try await DownloadQueue.pause(self, id) }

    /// Moves an asset to place `index` of the queue (0: first; past the end: last). Persists.
    public func move(_ id: String, to index: Int) async throws(DownloadError) { try await DownloadQueue.move(self, id, to: index) }

    /// Changes an asset's availability window, applied at once (an asset past its new end expires now). Persists.
    public func setWindow(_ id: String, _ window: AvailabilityWindow) async throws(DownloadError) { try await DownloadQueue.setWindow(self, id, window) }

    /// Resumes a paused asset.
    public func resume(_ id: String) async throws(DownloadError) { try await DownloadQueue.resume(self, id) }

    /// Lets a blocked asset be tried again.
    public func clearRetryCount(_ id: String) async throws(DownloadError) { try await DownloadQueue.clearRetryCount(self, id) }

    /// Removes one asset: stops its download, deletes its files and its index row.
    /// A damaged record (``damagedAssets()``) is removed the same way.
    public func remove(_ id: String) async throws(DownloadError) { try await DownloadQueue.remove(self, id) }

    /// Puts one asset back as it was before it downloaded: its files deleted (the plan kept), paused, queued, without
    /// completion or play dates, failure or retries; it stays in the queue with its options and window until resumed
    /// or removed. The steps hear of it as of a removal (its license is released).
    public func reset(_ id: String) async throws(DownloadError) { try await DownloadQueue.reset(self, id) }

    /// Removes every asset not yet downloaded (the queue); complete ones stay.
    public func flush() async throws(DownloadError) {
        for asset in try await index.all() where asset.state != .complete { try await remove(asset.id) }
    }

    /// Removes every asset.
    public func deleteAll() async throws(DownloadError) {
        for asset in try await index.all() { try await remove(asset.id) }
    }

    /// The global switch; persists across restarts. Switching off stops the current download.
    public func setEnabled(_ value: Bool) async throws(DownloadError) { try await DownloadQueue.setEnabled(self, value) }

    /// Whether downloading is switched on.
    public var isEnabled: Bool { enabled }

    /// Changes the rules (they apply from the next file).
    public func setRules(_ rules: DownloadRules) {
        configuration.rules = rules
        wake()
    }

    /// Deletes the files of every asset whose window has closed, marks it expired and reports it.
    @discardableResult
    public func sweepExpired() async throws(DownloadError) -> [String] {
        let now = environment.clock.now
        return try await DownloadQueue.expire(self, try await index.all().filter { QueuePolicy.hasExpired($0, at: now) }.map(\.id))
    }

    // MARK: Reads (``DownloadReads``)

    /// Every asset in queue order, as of now. An asset found past its window is expired here and then: its files
    /// are deleted, it is listed as expired. With `availabilityFilter`, only those inside their window (published,
    /// not expired).
    public func assets(availabilityFilter: Bool = false) async throws(DownloadError) -> [DownloadAsset] {
        try await DownloadReads.assets(self, availabilityFilter: availabilityFilter)
    }

    /// One asset, as of now (see ``assets(availabilityFilter:)``).
    public func asset(_ id: String) async throws(DownloadError) -> DownloadAsset { try await DownloadReads.asset(self, id) }

    /// The asset's progress, from what is on disk.
    public func progress(_ id: String) async throws(DownloadError) -> DownloadProgress { try await DownloadReads.progress(self, id) }

    /// The local path of the asset's entry point (master playlist, MPD, manifest or file). Expired and unpublished
    /// assets have none. Players go through the playback proxy, never to the files.
    package func localPath(_ id: String) async throws(DownloadError) -> String {
        store.path(id, try await DownloadReads.playable(self, id).plan.mainPath)
    }

    /// The asset's folder opened read-only, for the playback proxy to open its files by name below it (no link
    /// followed, the folder itself included); nil when it is not there (nothing downloaded yet, or removed).
    package nonisolated func openFolder(_ id: String) throws(DownloadError) -> ConfinedFolder? {
        guard AssetStore.isValidID(id) else { throw .invalidArgument("asset IDs are 1-128 of A-Z a-z 0-9 . _ - (got \(id))") }
        do { return try ConfinedFolder.openIfPresent(store.root + "/" + id) } catch { throw .storage("cannot open the folder of \(id): \(error)") }
    }

    /// Records the first play (for expiry after play). Expired assets cannot be played.
    public func registerPlayStart(_ id: String) async throws(DownloadError) { try await DownloadReads.registerPlayStart(self, id) }

    /// Keeps a file the playback proxy fetched whole from the origin while an asset plays (download
    /// and play). The engine owns the device's store: this is the one door through which anything but its own
    /// attempts writes there — under the storage rules (`maxStorageAllowed`, headroom), counted in the usage, below the
    /// asset's folder with no link followed, only for a file of the asset's plan not yet on disk, and reported
    /// (``DownloadEvent/fileKept(assetID:path:bytes:)``). A file of a complete asset is not needed; one of an expired
    /// or removed asset is refused.
    public func keepFetched(_ id: String, path: String, bytes: [UInt8]) async throws(DownloadError) {
        try await DownloadReads.keepFetched(self, id, path: path, bytes: bytes)
    }

    /// Keeps bytes a player was sent from the origin at `offset` of a single file being downloaded: appended to its
    /// partial download when they continue it (and come from the same version of the file), under the storage
    /// rules; otherwise — a jump ahead, the engine downloading it now — left alone.
    public func extendPart(_ id: String, path: String, offset: Int64, bytes: [UInt8], total: Int64?) async throws(DownloadError) {
        try await DownloadReads.extendPart(self, id, path: path, offset: offset, bytes: bytes, total: total)
    }

    // MARK: Running (``DownloadRunLoop``)

    /// Downloads in the background, as an app's engine does: ``runContinuously(recheckInterval:)`` in a task
    /// this engine holds, so ``stop()`` (or ``close()``) ends it and waits for it.
    public func start(recheckInterval: Duration = .seconds(30)) { DownloadRunLoop.start(self, recheckInterval: recheckInterval) }

    /// Stops the background loop (the current download stops; its partial files stay).
    public func stop() async { await DownloadRunLoop.stop(self) }

    /// Works through the queue now, and again whenever assets are added or resumed, retries are cleared,
    /// downloads are enabled or rules change, and every `recheckInterval` (free space and networks change on
    /// their own), until the calling task is cancelled. For callers that own their tasks; ``start(recheckInterval:)``
    /// runs it in the background.
    public func runContinuously(recheckInterval: Duration = .seconds(30)) async {
        await DownloadRunLoop.runContinuously(self, recheckInterval: recheckInterval)
    }

    /// Works through the queue until nothing more can be done now: every asset is complete, blocked,
    /// paused, held by a rule or expired, or downloads are switched off. Cancelling the calling task
    /// stops the current download (its partial files stay, to be resumed).
    /// An index that cannot be read or written stops the run at once, with a ``DownloadEvent/storageFailed(_:)``
    /// event and ``RunSummary/storageFailure`` set (carrying on would retry without counting, for ever).
    public func run() async -> RunSummary { await DownloadRunLoop.run(self) }

    /// The states of every asset.
    public func summary() async -> RunSummary { await DownloadRunLoop.summary(self) }

    // MARK: Upkeep (``DownloadUpkeep``)

    /// Hands the engine a fresh URL and/or request headers for an asset, typically after
    /// ``DownloadEvent/authorizationRequired(assetID:status:)`` (a signed URL or a token expired). The files
    /// already on disk stay and the asset resumes from them: every file URL on the old URL's host under its
    /// folder moves to the same place under the new URL's folder, and a file URL that carried the old URL's
    /// query (a CDN token) carries the new one. `headers` (when given) replace the asset's headers. The retry
    /// count is cleared and a blocked asset is queued again.
    public func updateURL(_ id: String, url: String? = nil, headers: [String: String]? = nil) async throws(DownloadError) {
        try await DownloadUpkeep.updateURL(self, id, url: url, headers: headers)
    }

    /// Hands the engine a fresh entitlement token for an asset added with a license request (``LicenseRequest``), when
    /// the one it was added with expired: kept sealed like the first, its retries cleared, a blocked asset queued again.
    public func updateLicenseToken(_ id: String, token: String) async throws(DownloadError) {
        try await DownloadUpkeep.updateLicenseToken(self, id, token: token)
    }

    /// The index's records that cannot be read. They are not in ``assets(availabilityFilter:)``; ``remove(_:)``
    /// deletes one (row and files) when the application decides to.
    public func damagedAssets() async throws(DownloadError) -> [DamagedRecord] { try await index.damaged() }

    /// Brings a data store written by an earlier version to the current layout, once per engine (the first
    /// ``run()`` does it): plans kept in the index (inline in a record, or in the plan table) move into their
    /// asset's folder, each written there before the index lets go of it, so an asset is readable and playable
    /// before, during and after. Emits ``DownloadEvent/dataStoreUpgradeBegan`` and
    /// ``DownloadEvent/dataStoreUpgradeFinished(upgraded:)`` when there is anything to do.
    public func upgradeDataStore() async throws(DownloadError) { try await DownloadUpkeep.upgradeDataStore(self) }
}
