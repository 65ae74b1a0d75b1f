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
/// earlier version brought to the current layout. Runs on the engine's isolation.
enum DownloadUpkeep {
    static func updateURL(_ engine: isolated DownloadManager, _ id: String, url: String?, headers: [String: String]?) async throws(DownloadError) {
        guard var asset = try await engine.index.find(id) else { throw .notFound(id) }
        asset = try DownloadReads.withPlan(engine, asset)
        if let url {
            guard let new = URL(string: url), let scheme = new.scheme?.lowercased(), ["http", "https"].contains(scheme), new.host != nil,
                  let old = URL(string: asset.url) else {
                throw .invalidArgument("not an http(s) URL: \(DownloadFailure.redacted(url))")
            }
            let plan = asset.plan.rebased(from: old, to: new)
            if plan != asset.plan {
                do { try engine.store.writePlan(id, plan) } catch { throw .storage(error.description) }
            }
            asset.plan = plan
            asset.url = url
        }
        if let headers { asset.options.headers = headers.isEmpty ? nil : headers }
        try await requeue(engine, asset)
    }

    /// Gives an asset added with a license request a fresh entitlement token (the one it was added with expired).
    static func updateLicenseToken(_ engine: isolated DownloadManager, _ id: String, token: String) async throws(DownloadError) {
        guard var asset = try await engine.index.find(id) else { throw .notFound(id) }
        guard asset.options.license != nil else {
            throw .invalidArgument("\(id) was added without a license request, so it has no entitlement token; an origin's token goes in a header (download update-url --header)")
        }
        asset.options.license?.token = token
        try await requeue(engine, asset)
    }

    /// An asset with fresh credentials: its retries cleared, queued again when it was blocked.
    private static func requeue(_ engine: isolated DownloadManager, _ asset: DownloadAsset) async throws(DownloadError) {
        var asset = asset
        let id = asset.id
        asset.retryCount = 0
        let state = asset.state
        if asset.state == .blocked {
            asset.state = .queued
            asset.failure = nil
        }
        try await engine.index.update(asset)
        if asset.state != state { engine.emit(.stateChanged(assetID: id, state: asset.state)) }
        engine.emit(.queueChanged)
        engine.wake()
    }

    /// Reports each damaged record once per engine (an event per asset).
    static func reportDamage(_ engine: isolated DownloadManager) async {
        guard let damaged = await DownloadRunLoop.checked(engine, { () async throws(DownloadError) in try await engine.index.damaged() }) else { return }
        for record in damaged where engine.reportedDamage.insert(record.id).inserted {
            engine.emit(.damaged(assetID: record.id, reason: record.reason))
        }
    }

    static func upgradeDataStore(_ engine: isolated DownloadManager) async throws(DownloadError) {
        guard !engine.upgraded else { return }
        // Tokens and header values an earlier version stored in the clear are sealed now.
        let sealed = try await engine.index.sealLegacySecrets()
        if sealed > 0 {
            engine.configuration.logger.notice("sealed the tokens and headers of earlier records", metadata: ["assets": .stringConvertible(sealed)])
        }
        let legacy = try await engine.index.legacyPlanIDs()
        guard !legacy.isEmpty else {
            engine.upgraded = true
            return
        }
        engine.emit(.dataStoreUpgradeBegan)
        var count = 0
        for id in legacy {
            guard let asset = try await engine.index.find(id), !asset.plan.isPlaceholder else { continue }
            do {
                if try engine.store.readPlan(id) == nil { try engine.store.writePlan(id, asset.plan) }
            } catch {
                throw .storage("asset \(id): \(error.description)")
            }
            try await engine.index.releaseLegacyPlan(id)
            count += 1
        }
        engine.upgraded = true
        engine.emit(.dataStoreUpgradeFinished(upgraded: count))
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
