import Foundation
import NIOCore
import SatchelBytes
import SatchelRights

extension Agent {
    /// Acquires a license for `asset` from the registered server (or `server`) and stores it. A license
    /// acquired while the clock is untrusted installs, and reports `untrustedTime` until trust returns.
    public func acquire(asset: String, token: String, persistent: Bool = false, server: String? = nil) async throws(AgentError) -> StoredLicense {
        let registered = try identity.registered().server
        let server = server ?? registered
        let (answer, nonce) = try await signedPost("/licenses", server: server, token: token) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, assetID: asset, persistent: persistent ? true : nil, nonce: nonce, time: time)
        }
        let license = try await install(answer, nonce: nonce, server: server, firstUse: nil)
        logger.info("license acquired", metadata: ["asset": .string(asset), "license": .string(license.licenseID)])
        return license
    }

    /// Renews the asset's license (the rental restarts; a started playback window keeps running).
    public func renew(asset: String, token: String) async throws(AgentError) -> StoredLicense {
        let snapshot = try await store.snapshot()
        guard let current = newest(asset, in: snapshot) else { throw .noLicense(asset) }
        return try await renew(current, token: token)
    }

    func renew(_ current: StoredLicense, token: String) async throws(AgentError) -> StoredLicense {
        let renewal = (try? SignedToken.unverifiedClaims(current.license, as: LicenseClaims.self))?.renewalURL ?? "/licenses/renew"
        let (answer, nonce) = try await signedPost(renewal, server: current.server, token: token) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, licenseID: current.licenseID, nonce: nonce, time: time)
        }
        let license = try await install(answer, nonce: nonce, server: current.server, firstUse: current.firstUse)
        logger.info("license renewed", metadata: ["asset": .string(current.assetID), "license": .string(current.licenseID)])
        return license
    }

    /// Deletes the asset's license at once and gives it back to the server; a release the server cannot
    /// take now is kept (sealed) and delivered at the next contact. Answers true when the server took it now.
    @discardableResult
    public func release(asset: String) async throws(AgentError) -> Bool {
        let snapshot = try await store.snapshot()
        guard let license = newest(asset, in: snapshot) else { throw .noLicense(asset) }
        let owed = OwedRelease(licenseID: license.licenseID, assetID: license.assetID, server: license.server, owedSince: clockReader.read().wall,
                               attempts: 0)
        try await store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
            state.licenses[owed.licenseID] = nil
            if !state.owed.contains(where: { $0.licenseID == owed.licenseID }) { state.owed.append(owed) }
            return ((), [.delete(owed.licenseID)])
        }
        let delivered = try await deliverReleases()
        return delivered.contains(license.licenseID)
    }

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

    /// Contacts the server: its signed statement of this device's licenses (which restores a store that could not
    /// be believed, and removes licenses it holds released), its time (which can restore trust in the clock), the
    /// releases owed, and the renewals due (with `token`).
    public func sync(token: String? = nil) async throws(AgentError) -> SyncReport {
        let registration = try identity.registered()
        let (revoked, restored, serverTime) = try await reconcile(server: registration.server)
        let delivered = try await deliverReleases()
        var renewed: [String] = [], pending: [String] = []
        let snapshot = try await store.snapshot()
        let now = try await trustedNow(snapshot)
        for license in installed(snapshot) where now.map({ license.rights.renewalDue(license.usage, at: $0) }) ?? false {
            guard let token else {
                pending.append(license.assetID)
                continue
            }
            do {
                _ = try await renew(license, token: token)
                renewed.append(license.assetID)
            } catch {
                logger.warning("renewal failed", metadata: ["asset": .string(license.assetID), "problem": .string(error.problemType)])
                pending.append(license.assetID)
            }
        }
        return SyncReport(serverTime: serverTime, releasesDelivered: delivered.count, releasesOwed: try await store.snapshot().state.owed.count,
                          renewed: renewed, renewalsPending: pending, revoked: revoked, restored: restored)
    }

    /// Asks `server` for its signed statement of this device's licenses and reconciles the store with it
    /// (``StoreReconciliation``), anchoring the clock to its time; a store that cannot be believed is rebuilt from
    /// it. Answers the assets revoked, whether the store was restored, and the server's time.
    func reconcile(server: String) async throws(AgentError) -> (revoked: [String], restored: Bool, time: Date) {
        let (answer, nonce) = try await signedPost("/licenses/status", server: server, token: nil) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, nonce: nonce, time: time)
        }
        let registration = try identity.registered()
        let reading = clockReader.read()
        let token = try Self.decode(LicenseStatusAnswer.self, answer, what: "the license status").status
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
            if let verified = claims(of: row.license) { verdicts.licenses[digest] = verified } else { verdicts.invalid.insert(digest) }
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
        report(events)
        var revoked: [String] = []
        for id in outcome.removed {
            let asset = rows[id].flatMap { examined.licenses[DeviceState.digest(of: $0.license)]?.assetID } ?? id
            revoked.append(asset)
            report(.licenseRevoked(licenseID: id, asset: asset))
            logger.notice("license removed: the server holds it released or does not know it", metadata: ["license": .string(id)])
        }
        if restored { logger.notice("the license store was restored from the server's records", metadata: ["licenses": .stringConvertible(outcome.state.licenses.count)]) }
        return (revoked, restored, status.time)
    }

    /// Delivers owed releases; answers the license IDs the server took.
    func deliverReleases() async throws(AgentError) -> [String] {
        var delivered: [String] = []
        for owed in try await store.snapshot().state.owed {
            var settled = false
            do {
                _ = try await signedPost("/licenses/release", server: owed.server, token: nil, timeout: .seconds(5)) { registration, nonce, time in
                    DeviceRequestClaims(certificate: registration.certificate, licenseID: owed.licenseID, nonce: nonce, time: time)
                }
                settled = true
                delivered.append(owed.licenseID)
                report(.releaseDelivered(licenseID: owed.licenseID))
            } catch where !error.isRetryable && error.code == "license-server" {
                settled = true
                report(.releaseRefused(licenseID: owed.licenseID, problem: error.problemType))
            } catch {
                logger.info("release still owed", metadata: ["license": .string(owed.licenseID), "problem": .string(error.problemType)])
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

    /// Verifies a license answer (the server's signature, this device, this request's nonce, keys that open),
    /// and installs it with its clock anchor, in one change of the store.
    private func install(_ answer: Data, nonce: String, server: String, firstUse: Date?) async throws(AgentError) -> StoredLicense {
        let registration = try identity.registered()
        let token = try Self.decode(LicenseAnswer.self, answer, what: "the license").license
        let reading = clockReader.read()
        let claims = try verify(token, registration)
        guard claims.nonce == nonce else { throw .invalidAnswer("the license is not the answer to this request") }
        let license = StoredLicense(licenseID: claims.licenseID, assetID: claims.assetID, license: token, server: server,
                                    acquired: claims.serverTime, firstUse: firstUse, persistent: claims.rights.persistent,
                                    rights: claims.rights, keyIDs: claims.keys.map(\.kid))
        _ = try open(license)
        let digest = DeviceState.digest(of: token)
        let events = try await store.change { (state, _) throws(AgentError) -> ([ClockEvent], [LicenseStore.RowChange]) in
            let kept = state.licenses[claims.licenseID]?.firstUse ?? firstUse
            state.licenses[claims.licenseID] = DeviceState.InstalledLicense(digest: digest, firstUse: kept)
            return (state.clock.anchor(serverTime: claims.serverTime, reading), [.save(license)])
        }
        report(events)
        return license
    }

    /// Posts a request signed by the device key, dated by the server's time, to `path` of `server`; a refusal for a
    /// time too far from the server's (`clock-skew`) fetches the server's signed time and tries once more. Answers
    /// the body and the request's nonce.
    func signedPost(_ path: String, server: String, token: String?, timeout: TimeAmount = .seconds(30),
                    _ claims: (DeviceIdentity.Registration, String, Date) -> DeviceRequestClaims) async throws(AgentError) -> (Data, String) {
        let registration = try identity.registered()
        let client = try LicenseServerClient(server: server, timeout: timeout)
        var retried = false
        while true {
            let nonce = Hex.encode(SecureRandom.bytes(16))
            let request = try sign(claims(registration, nonce, try await requestTime(server: server)))
            do {
                return (try await client.post(path, json: DeviceRequestEnvelope(request: request), token: token), nonce)
            } catch where error.problemType == "clock-skew" && !retried {
                retried = true
                _ = try await fetchTime(server: server)
            }
        }
    }

    private func sign(_ claims: DeviceRequestClaims) throws(AgentError) -> String {
        do { return try SignedToken.sign(claims, key: identity.key) } catch { throw .storage("cannot sign with the device key") }
    }
}
