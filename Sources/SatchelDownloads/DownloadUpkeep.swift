import Foundation
import SatchelStreams

/// A record of the index that cannot be read: the asset is listed as damaged, never dropped, and its files stay.
public struct DamagedRecord: Sendable, Equatable, Codable {
    /// The asset's ID (the row's key, readable even when the record is not).
    public var id: String
    /// Why the record cannot be read (field names only, never values).
    public var reason: String

    /// A damaged record.
    public init(id: String, reason: String) {
        self.id = id
        self.reason = reason
    }
}

/// The engine's upkeep: fresh credentials for an asset, damaged records reported, and a data store written by an
/// earlier version brought to the current layout. It holds the damaged records already reported (an event each, once
/// per engine) and whether the store has been brought up to date. Runs on the engine's isolation.
final class DownloadUpkeep {
    private let parts: EngineParts
    private let reporter: EngineReporter
    private let queue: DownloadQueue
    private let reads: DownloadReads
    private var reportedDamage: Set<String> = []
    /// True once ``upgradeDataStore()`` has run.
    private(set) var upgraded = false

    init(parts: EngineParts, reporter: EngineReporter, queue: DownloadQueue, reads: DownloadReads) {
        self.parts = parts
        self.reporter = reporter
        self.queue = queue
        self.reads = reads
    }

    nonisolated(nonsending) func updateURL(_ id: String, url: String?, headers: [String: String]?) async throws(DownloadError) {
        guard var asset = try await parts.index.find(id) else { throw .notFound(id) }
        asset = try reads.withPlan(asset)
        if let url {
            guard let new = URL(string: url), let scheme = new.scheme?.lowercased(), ["http", "https"].contains(scheme), new.host != nil,
                  let old = URL(string: asset.url) else {
                throw .invalidArgument("not an http(s) URL: \(DownloadFailure.redacted(url))")
            }
            let plan = asset.plan.rebased(from: old, to: new)
            if plan != asset.plan {
                do { try parts.store.writePlan(id, plan) } catch { throw .storage(error.description) }
            }
            asset.plan = plan
            asset.url = url
        }
        if let headers { asset.options.headers = headers.isEmpty ? nil : headers }
        try await requeue(asset)
    }

    /// Gives an asset added with a license request a fresh entitlement token (the one it was added with expired).
    nonisolated(nonsending) func updateLicenseToken(_ id: String, token: String) async throws(DownloadError) {
        guard var asset = try await parts.index.find(id) else { throw .notFound(id) }
        guard asset.options.license != nil else {
            throw .invalidArgument("\(id) was added without a license request, so it has no entitlement token; an origin's token goes in a header (download update-url --header)")
        }
        asset.options.license?.token = token
        try await requeue(asset)
    }

    /// An asset with fresh credentials: its retries cleared, queued again when it was blocked.
    private nonisolated(nonsending) func requeue(_ asset: DownloadAsset) async throws(DownloadError) {
        var asset = asset
        let id = asset.id
        asset.retryCount = 0
        let state = asset.state
        if asset.state == .blocked {
            asset.state = .queued
            asset.failure = nil
        }
        try await parts.index.update(asset)
        if asset.state != state { reporter.emit(.stateChanged(assetID: id, state: asset.state)) }
        reporter.emit(.queueChanged)
        queue.wake()
    }

    /// Reports each damaged record once per engine (an event per asset).
    nonisolated(nonsending) func reportDamage() async throws(DownloadError) {
        for record in try await parts.index.damaged() where reportedDamage.insert(record.id).inserted {
            reporter.emit(.damaged(assetID: record.id, reason: record.reason))
        }
    }

    nonisolated(nonsending) func upgradeDataStore() async throws(DownloadError) {
        guard !upgraded else { return }
        // Tokens and header values an earlier version stored in the clear are sealed now.
        let sealed = try await parts.index.sealLegacySecrets()
        if sealed > 0 {
            parts.logger.notice("sealed the tokens and headers of earlier records", metadata: ["assets": .stringConvertible(sealed)])
        }
        let legacy = try await parts.index.legacyPlanIDs()
        guard !legacy.isEmpty else {
            upgraded = true
            return
        }
        reporter.emit(.dataStoreUpgradeBegan)
        var count = 0
        for id in legacy {
            guard let asset = try await parts.index.find(id), !asset.plan.isPlaceholder else { continue }
            do {
                if try parts.store.readPlan(id) == nil { try parts.store.writePlan(id, asset.plan) }
            } catch {
                throw .storage("asset \(id): \(error.description)")
            }
            try await parts.index.releaseLegacyPlan(id)
            count += 1
        }
        upgraded = true
        reporter.emit(.dataStoreUpgradeFinished(upgraded: count))
    }
}

extension DownloadPlan {
    /// The plan with its file URLs moved from `old` (the asset's URL) to `new`: a URL on the old URL's scheme,
    /// host and port takes the new ones; under the old URL's folder it moves under the new folder; carrying
    /// the old URL's query it carries the new query. Local paths do not change, so files on disk stay valid.
    public func rebased(from old: URL, to new: URL) -> DownloadPlan {
        var plan = self
        plan.resources = resources.map { resource in
            var moved = resource
            moved.url = Self.rebase(resource.url, from: old, to: new)
            return moved
        }
        return plan
    }

    static func rebase(_ url: String, from old: URL, to new: URL) -> String {
        guard var target = URLComponents(string: url), let before = URLComponents(url: old, resolvingAgainstBaseURL: true),
              let after = URLComponents(url: new, resolvingAgainstBaseURL: true),
              target.scheme?.lowercased() == before.scheme?.lowercased(), target.host?.lowercased() == before.host?.lowercased(),
              target.port == before.port else { return url }
        target.scheme = after.scheme
        target.host = after.host
        target.port = after.port
        let oldFolder = folder(of: before.percentEncodedPath), newFolder = folder(of: after.percentEncodedPath)
        if target.percentEncodedPath.hasPrefix(oldFolder) {
            target.percentEncodedPath = newFolder + target.percentEncodedPath.dropFirst(oldFolder.count)
        }
        if let query = before.percentEncodedQuery, target.percentEncodedQuery == query {
            target.percentEncodedQuery = after.percentEncodedQuery
        }
        return target.string ?? url
    }

    private static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "/" }
        return String(path[...slash])
    }
}
