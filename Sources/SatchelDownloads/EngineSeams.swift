import Foundation
import SatchelStreams

/// The engine's persistent index: one record per asset (metadata, state and progress, never the plan, which
/// lives in the asset's folder) and the engine's settings.
/// `DownloadIndex` keeps it in SQLite; another store (a test double, a shared database) may stand in.
public protocol DownloadIndexing: Sendable {
    /// Every asset, in queue order.
    func all() async throws(DownloadError) -> [DownloadAsset]
    /// How many records the index holds (damaged ones too).
    func count() async throws(DownloadError) -> Int
    /// One asset, nil when there is none.
    func find(_ id: String) async throws(DownloadError) -> DownloadAsset?
    /// Whether the asset is paused (read cheaply); nil when there is no such asset.
    func isPaused(_ id: String) async throws(DownloadError) -> Bool?
    /// Inserts an asset (or replaces it).
    func save(_ asset: DownloadAsset) async throws(DownloadError)
    /// Updates an asset still in the index; false when its record is gone (a removal is never undone).
    @discardableResult
    func update(_ asset: DownloadAsset) async throws(DownloadError) -> Bool
    /// Deletes an asset's record.
    func delete(_ id: String) async throws(DownloadError)
    /// The next free queue position.
    func nextPosition() async throws(DownloadError) -> Int
    /// A stored setting.
    func setting(_ key: String) async throws(DownloadError) -> String?
    /// Stores a setting.
    func setSetting(_ key: String, _ value: String) async throws(DownloadError)
    /// Closes the index.
    func close() async
    /// Records that cannot be read (listed as damaged, never dropped).
    func damaged() async throws(DownloadError) -> [DamagedRecord]
    /// Assets whose plans an earlier version kept in the index (``DownloadManager/upgradeDataStore()`` moves them).
    func legacyPlanIDs() async throws(DownloadError) -> [String]
    /// Lets go of an asset's plan kept in the index, once the plan is in the asset's folder.
    func releaseLegacyPlan(_ id: String) async throws(DownloadError)
    /// Seals the secrets an earlier version stored unsealed; answers how many records changed.
    func sealLegacySecrets() async throws(DownloadError) -> Int
}

extension DownloadIndexing {
    /// The assets and damaged records, counted by reading them (an index of its own may count them cheaper).
    public func count() async throws(DownloadError) -> Int { try await all().count + damaged().count }
    /// An index that never damages records or kept plans inline has none.
    public func damaged() async throws(DownloadError) -> [DamagedRecord] { [] }
    /// None.
    public func legacyPlanIDs() async throws(DownloadError) -> [String] { [] }
    /// Nothing to let go of.
    public func releaseLegacyPlan(_ id: String) async throws(DownloadError) {}
    /// Nothing to seal.
    public func sealLegacySecrets() async throws(DownloadError) -> Int { 0 }
}

/// Fetches over the network: the asset's first response, manifests, and each file into the store.
/// ``ResourceFetcher`` does it over HTTP; a license step or a permission step can wrap it.
package protocol ResourceFetching: Sendable {
    /// Fetches the asset's URL far enough to know what it is.
    func probe(_ url: URL, headers: [String: String], origins: OriginPolicy) async throws(DownloadFailure) -> DownloadPlanner.Probe
    /// Fetches a manifest's text.
    func text(_ url: URL, headers: [String: String], origins: OriginPolicy) async throws(DownloadFailure) -> String
    /// Downloads one resource into the store unless it is complete; a warning when sizes disagree. Every request, and
    /// every redirect it meets, keeps to `origins`.
    func fetch(_ resource: DownloadResource, index: Int, assetID: String, store: any AssetStoring, headers: [String: String],
               origins: OriginPolicy, budget: DownloadBudget, progress: LiveProgress) async throws(DownloadFailure) -> String?
    /// Releases connections.
    func shutdown() async
}

/// The downloaded files. ``AssetStore`` keeps them under a root directory, one folder per asset.
package protocol AssetStoring: Sendable {
    /// The directory holding every asset's folder.
    var root: String { get }
    /// The final path of a file of the asset.
    func path(_ id: String, _ localPath: String) -> String
    /// The open folder holding `localPath` and the file's name in it (links never followed).
    func folder(_ id: String, of localPath: String, create: Bool, url: String) throws(DownloadFailure) -> (folder: AssetFolder, name: String)?
    /// Which of the plan's files are complete, and the bytes on disk.
    func scan(_ id: String, plan: DownloadPlan) -> AssetStore.Scan
    /// Writes the plan's manifests.
    func writeManifests(_ id: String, plan: DownloadPlan) throws(DownloadFailure)
    /// Creates the folders the plan's files go into.
    func makeDirectories(_ id: String, plan: DownloadPlan) throws(DownloadFailure)
    /// Deletes an asset's files (all of them, or all but its plan).
    func delete(_ id: String, keepingPlan: Bool) throws(DownloadFailure)
    /// Writes the asset's plan into its folder, crash-safe.
    func writePlan(_ id: String, _ plan: DownloadPlan) throws(DownloadFailure)
    /// The asset's plan, nil when there is none.
    func readPlan(_ id: String) throws(DownloadFailure) -> DownloadPlan?
    /// Bytes used by every asset.
    func usage() -> Int64
    /// Stores a complete file fetched outside the engine, unless it is already there; answers whether it was.
    func keepFetched(_ id: String, path localPath: String, bytes: [UInt8]) throws(DownloadFailure) -> Bool
    /// Appends bytes fetched outside the engine to a file's partial download when they continue it; answers whether
    /// they were kept.
    func extendPart(_ id: String, path localPath: String, offset: Int64, bytes: [UInt8], total: Int64?) throws(DownloadFailure) -> Bool
}

/// A step every attempt passes before any file is fetched (a license, a permission from the backplane).
/// A thrown failure is handled as any other: retried under the Rule of Threes unless it is fatal.
public protocol DownloadStep: Sendable {
    /// Prepares `asset` for an attempt, or says why it cannot be downloaded now.
    func prepare(_ asset: DownloadAsset) async throws(DownloadFailure)
    /// The asset's download completed (a license step renews a license near its end). Failures are the step's own.
    func finished(_ asset: DownloadAsset) async
    /// The asset was removed (a license step releases its license).
    func removed(_ asset: DownloadAsset) async
}

extension DownloadStep {
    /// Nothing to do.
    public func finished(_ asset: DownloadAsset) async {}
    /// Nothing to do.
    public func removed(_ asset: DownloadAsset) async {}
}
