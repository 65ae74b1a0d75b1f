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

extension DownloadManager {
    // MARK: Fresh credentials (401 / 403)

    /// Hands the engine a fresh URL and/or request headers for an asset, typically after
    /// ``DownloadEvent/authorizationRequired(assetID:status:)`` (a signed URL or a token expired). The files
    /// already on disk stay and the asset resumes from them: every file URL on the old URL's host under its
    /// folder moves to the same place under the new URL's folder, and a file URL that carried the old URL's
    /// query (a CDN token) carries the new one. `headers` (when given) replace the asset's headers. The retry
    /// count is cleared and a blocked asset is queued again.
    public func updateURL(_ id: String, url: String? = nil, headers: [String: String]? = nil) async throws(DownloadError) {
        guard var asset = try await index.find(id) else { throw .notFound(id) }
        asset = try withPlan(asset)
        if let url {
            guard let new = URL(string: url), let scheme = new.scheme?.lowercased(), ["http", "https"].contains(scheme), new.host != nil,
                  let old = URL(string: asset.url) else {
                throw .invalidArgument("not an http(s) URL: \(DownloadFailure.redacted(url))")
            }
            let plan = asset.plan.rebased(from: old, to: new)
            if plan != asset.plan {
                do { try store.writePlan(id, plan) } catch { throw .storage(error.description) }
            }
            asset.plan = plan
            asset.url = url
        }
        if let headers { asset.options.headers = headers.isEmpty ? nil : headers }
        asset.retryCount = 0
        let state = asset.state
        if asset.state == .blocked {
            asset.state = .queued
            asset.failure = nil
        }
        try await index.update(asset)
        if asset.state != state { emit(.stateChanged(assetID: id, state: asset.state)) }
        emit(.queueChanged)
        wake()
    }

    // MARK: Damaged records

    /// The index's records that cannot be read. They are not in ``assets(availabilityFilter:)``; ``remove(_:)``
    /// deletes one (row and files) when the application decides to.
    public func damagedAssets() async throws(DownloadError) -> [DamagedRecord] {
        try await index.damaged()
    }

    /// Reports each damaged record once per engine (an event per asset).
    func reportDamage() async {
        guard let damaged = await checked({ () async throws(DownloadError) in try await index.damaged() }) else { return }
        for record in damaged where reportedDamage.insert(record.id).inserted {
            emit(.damaged(assetID: record.id, reason: record.reason))
        }
    }

    // MARK: Upgrade (seed 003 Appendix B)

    /// Brings a data store written by an earlier version to the current layout, once per engine (the first
    /// ``run()`` does it): plans kept in the index (inline in a record, or in the plan table) move into their
    /// asset's folder, each written there before the index lets go of it, so an asset is readable and playable
    /// before, during and after. Emits ``DownloadEvent/dataStoreUpgradeBegan`` and
    /// ``DownloadEvent/dataStoreUpgradeFinished(upgraded:)`` when there is anything to do.
    public func upgradeDataStore() async throws(DownloadError) {
        guard !upgraded else { return }
        // Tokens and header values an earlier version stored in the clear are sealed now.
        let sealed = try await index.sealLegacySecrets()
        if sealed > 0 { configuration.logger.notice("sealed the tokens and headers of earlier records", metadata: ["assets": .stringConvertible(sealed)]) }
        let legacy = try await index.legacyPlanIDs()
        guard !legacy.isEmpty else {
            upgraded = true
            return
        }
        emit(.dataStoreUpgradeBegan)
        var count = 0
        for id in legacy {
            guard let asset = try await index.find(id), !asset.plan.isPlaceholder else { continue }
            do {
                if try store.readPlan(id) == nil { try store.writePlan(id, asset.plan) }
            } catch {
                throw .storage("asset \(id): \(error.description)")
            }
            try await index.releaseLegacyPlan(id)
            count += 1
        }
        upgraded = true
        emit(.dataStoreUpgradeFinished(upgraded: count))
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
