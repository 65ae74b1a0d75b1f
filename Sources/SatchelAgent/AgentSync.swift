import Foundation
import SatchelBytes
import SatchelRights

/// The agent's contact with its server beyond a license: the server's signed statement of the device's licenses
/// reconciled with the store (a store that cannot be believed rebuilt from it), owed releases delivered, renewals
/// due. It holds no state of its own: the store holds the sealed state, the device the registration. Runs on the
/// agent's isolation.
final class AgentSync {
    private let store: LicenseStore
    private let device: AgentDevice
    private let clock: AgentClock
    private let requests: AgentRequests
    private let reader: any ClockReader
    private let serverKeys: AgentServerKeys
    private let activity: AgentActivity
    private let reporter: AgentReporter

    init(store: LicenseStore, device: AgentDevice, clock: AgentClock, requests: AgentRequests, reader: any ClockReader,
         serverKeys: AgentServerKeys, activity: AgentActivity, reporter: AgentReporter) {
        self.store = store
        self.device = device
        self.clock = clock
        self.requests = requests
        self.reader = reader
        self.serverKeys = serverKeys
        self.activity = activity
        self.reporter = reporter
    }

    /// Contacts the server: its signed statement of this device's licenses (which restores a store that could not
    /// be believed, and removes licenses it holds released), its time (which can restore trust in the clock), the
    /// releases owed, and the renewals due (with `token`).
    nonisolated(nonsending) func sync(token: String?) async throws(AgentError) -> Agent.SyncReport {
        let registration = try device.registered()
        let (revoked, restored, serverTime) = try await reconcile(server: registration.server)
        let delivered = try await deliverReleases()
        var renewed: [String] = [], pending: [String] = []
        let snapshot = try await store.snapshot()
        let now = try await clock.trustedNow(snapshot)
        for license in device.installed(snapshot) where now.map({ license.rights.renewalDue(license.usage, at: $0) }) ?? false {
            guard let token else {
                pending.append(license.assetID)
                continue
            }
            do {
                _ = try await requests.renew(license, token: token)
                renewed.append(license.assetID)
            } catch {
                reporter.logger.warning("renewal failed", metadata: ["asset": .string(license.assetID), "problem": .string(error.problemType)])
                pending.append(license.assetID)
            }
        }
        return Agent.SyncReport(serverTime: serverTime, releasesDelivered: delivered.count, releasesOwed: try await store.snapshot().state.owed.count,
                          renewed: renewed, renewalsPending: pending, revoked: revoked, restored: restored)
    }

    /// Asks `server` for its signed statement of this device's licenses and reconciles the store with it
    /// (``StoreReconciliation``), anchoring the clock to its time; a store that cannot be believed is rebuilt from
    /// it. Answers the assets revoked, whether the store was restored, and the server's time.
    nonisolated(nonsending) func reconcile(server: String) async throws(AgentError) -> (revoked: [String], restored: Bool, time: Date) {
        let (answer, nonce) = try await requests.signedPost("/licenses/status", server: server, token: nil) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, nonce: nonce, time: time)
        }
        let token = try Agent.decode(LicenseStatusAnswer.self, answer, what: "the license status").status
        try await serverKeys.learn(kid: try? SignedToken.keyID(token))
        let registration = try device.registered()
        let reading = reader.read()
        let status: LicenseStatusClaims
        do {
            status = try SignedToken.verify(token, as: LicenseStatusClaims.self, key: registration.serverKeys.key(for: token))
        } catch {
            throw .invalidAnswer("the license status does not verify: \(error.description)")
        }
        guard status.nonce == nonce, status.deviceID == registration.deviceID else { throw .invalidAnswer("the license status is not the answer to this request") }
        // Every row verified here (the store's closure cannot call the actor); a row that arrives meanwhile is left alone.
        let rows = try await store.rawRows()
        var verdicts = StoreReconciliation.Verdicts()
        for row in rows.values {
            let digest = DeviceState.digest(of: row.license)
            if let checked = device.claims(of: row.license) { verdicts.licenses[digest] = checked } else { verdicts.invalid.insert(digest) }
        }
        let examined = verdicts
        let legacy = try await store.legacyReleases()
        let (outcome, restored, events) = try await store.rebuild { (believed, previous, rows) throws(AgentError) in
            var base = believed ?? DeviceState()
            if believed == nil { base.owed = previous?.owed ?? legacy }
            let outcome = StoreReconciliation.reconcile(base, previous: believed ?? previous, rows: rows, server: server, statuses: status.licenses,
                                                        verdicts: examined)
            var state = outcome.state
            let events = state.clock.anchor(serverTime: status.time, reading)
            return (state, (outcome, believed == nil, events), outcome.changes)
        }
        reporter.report(events)
        var revoked: [String] = []
        for id in outcome.removed {
            let asset = rows[id].flatMap { examined.licenses[DeviceState.digest(of: $0.license)]?.assetID } ?? id
            revoked.append(asset)
            reporter.report(.licenseRevoked(licenseID: id, asset: asset))
            reporter.logger.notice("license removed: the server holds it released or does not know it", metadata: ["license": .string(id)])
        }
        if restored { reporter.logger.notice("the license store was restored from the server's records", metadata: ["licenses": .stringConvertible(outcome.state.licenses.count)]) }
        return (revoked, restored, status.time)
    }

    /// Delivers owed releases; answers the license IDs the server took.
    /// Every installed license removed in one change of the store, each now a release owed to its server.
    nonisolated(nonsending) func reset() async throws(AgentError) -> [String] {
        let snapshot = try await store.snapshot()
        let installed = device.installed(snapshot)
        let now = reader.read().wall
        try await store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
            var rows: [LicenseStore.RowChange] = []
            for license in installed {
                state.licenses[license.licenseID] = nil
                if !state.owed.contains(where: { $0.licenseID == license.licenseID }) {
                    state.owed.append(OwedRelease(licenseID: license.licenseID, assetID: license.assetID, server: license.server, owedSince: now, attempts: 0))
                }
                rows.append(.delete(license.licenseID))
            }
            // Rows the sealed state no longer vouches for go too: the store is empty of licenses after a reset.
            for id in snapshot.rows.keys where !installed.contains(where: { $0.licenseID == id }) { rows.append(.delete(id)) }
            return ((), rows)
        }
        for license in installed { _ = try? await activity.record(.licenseReleased, asset: license.assetID, reason: "reset") }
        return installed.map(\.assetID)
    }

    nonisolated(nonsending) func deliverReleases() async throws(AgentError) -> [String] {
        var delivered: [String] = []
        for owed in try await store.snapshot().state.owed {
            var settled = false
            do {
                _ = try await requests.signedPost("/licenses/release", server: owed.server, token: nil, timeout: .seconds(5)) { registration, nonce, time in
                    DeviceRequestClaims(certificate: registration.certificate, licenseID: owed.licenseID, nonce: nonce, time: time)
                }
                settled = true
                delivered.append(owed.licenseID)
                reporter.report(.releaseDelivered(licenseID: owed.licenseID))
            } catch where !error.isRetryable && error.code == "license-server" {
                settled = true
                reporter.report(.releaseRefused(licenseID: owed.licenseID, problem: error.problemType))
            } catch {
                reporter.logger.info("release still owed", metadata: ["license": .string(owed.licenseID), "problem": .string(error.problemType)])
            }
            let id = owed.licenseID
            try await store.change { [settled] (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
                if settled {
                    state.owed.removeAll { $0.licenseID == id }
                } else if let index = state.owed.firstIndex(where: { $0.licenseID == id }) {
                    state.owed[index].attempts += 1
                }
                return ((), [])
            }
        }
        return delivered
    }
}
