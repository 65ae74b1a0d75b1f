import Foundation
import NIOCore
import SatchelBytes
import SatchelRights

extension Agent {
    /// Acquires a license for `asset` from the registered server (or `server`) and stores it; `customData` goes to the server's
    /// license policy as it is. A license acquired while the clock is untrusted installs, and reports `untrustedTime` until trust returns.
    public func acquire(asset: String, token: String, persistent: Bool = false, server: String? = nil, customData: String? = nil) async throws(AgentError) -> StoredLicense {
        try await requests.acquire(asset: asset, token: token, persistent: persistent, server: server, customData: customData)
    }

    /// Renews the asset's license (the rental restarts; a started playback window keeps running).
    public func renew(asset: String, token: String) async throws(AgentError) -> StoredLicense {
        let snapshot = try await trustedSnapshot()
        guard let current = device.newest(asset, in: snapshot) else { throw .noLicense(asset) }
        return try await requests.renew(current, token: token)
    }

    /// Deletes the asset's license at once and gives it back to the server; a release the server cannot
    /// take now is kept (sealed) and delivered at the next contact. Answers true when the server took it now.
    @discardableResult
    public func release(asset: String) async throws(AgentError) -> Bool {
        let snapshot = try await trustedSnapshot()
        guard let license = device.newest(asset, in: snapshot) else { throw .noLicense(asset) }
        let owed = OwedRelease(licenseID: license.licenseID, assetID: license.assetID, server: license.server, owedSince: clockReader.read().wall,
                               attempts: 0)
        try await store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
            state.licenses[owed.licenseID] = nil
            if !state.owed.contains(where: { $0.licenseID == owed.licenseID }) { state.owed.append(owed) }
            return ((), [.delete(owed.licenseID)])
        }
        _ = try? await activityLog.record(.licenseReleased, asset: license.assetID, reason: nil, seconds: nil, detail: nil)
        let delivered = try await syncing.deliverReleases().contains(license.licenseID)
        reporter.logger.info("license released", metadata: ["asset": .string(license.assetID), "license": .string(license.licenseID),
                                                   "server": .string(delivered ? "told" : "owed")])
        return delivered
    }

    /// Removes every installed license at once (the DRM store reset): each becomes a release owed to
    /// its server, delivered at the next sync; nothing is asked of the server now. Answers the assets whose licenses went.
    @discardableResult
    public func reset() async throws(AgentError) -> [String] { try await syncing.reset() }

    /// Contacts the server: its signed statement of this device's licenses (which restores a store that could not
    /// be believed, and removes licenses it holds released), its time (which can restore trust in the clock), the
    /// releases owed, and the renewals due (with `token`).
    public func sync(token: String? = nil) async throws(AgentError) -> SyncReport { try await syncing.sync(token: token) }

    /// What `sync` did.
    public struct SyncReport: Sendable, Equatable {
        /// The server's signed time, when it answered.
        public var serverTime: Date?
        /// Releases delivered.
        public var releasesDelivered: Int
        /// Releases still owed.
        public var releasesOwed: Int
        /// Licenses renewed.
        public var renewed: [String]
        /// Licenses due for renewal that were not renewed (no token, or the server refused).
        public var renewalsPending: [String]
        /// Licenses removed because the server holds them released (or does not know them).
        public var revoked: [String] = []
        /// True when the store could not be believed (``AgentError/storeTampered(_:)``) and was restored from the
        /// server's records.
        public var restored = false
    }

}
