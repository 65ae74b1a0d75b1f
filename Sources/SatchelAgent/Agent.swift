import Crypto
import Foundation
import Logging
import SatchelBytes
import SatchelRights

/// What the agent reports as it works (seed 000 §5.4's clock notification, and releases).
public enum AgentEvent: Sendable, Equatable {
    /// The device's clock went back: date-based rights are untrusted until the server confirms the time.
    case untrustedTime
    /// The server's time confirmed the device's clock again.
    case trustRestored
    /// A release owed to the server was delivered.
    case releaseDelivered(licenseID: String)
    /// The server refused a release for good (it no longer knows the license); it is no longer owed.
    case releaseRefused(licenseID: String, problem: String)
}

/// A content key opened for playback (only while the rights are valid). Never print `key`.
public struct PlaybackKey: Sendable, Equatable {
    /// The key ID, hex.
    public var keyID: String
    /// The key.
    public var key: SecretBytes
    /// The content IV, if the license carries one.
    public var iv: [UInt8]?

    /// A key with its ID (hex) and IV.
    public init(keyID: String, key: SecretBytes, iv: [UInt8]? = nil) {
        self.keyID = keyID
        self.key = key
        self.iv = iv
    }
}

/// A stored license with what its rights allow now.
public struct LicenseStatus: Sendable, Equatable {
    /// The license.
    public var license: StoredLicense
    /// Its rights now.
    public var evaluation: RightsEvaluation
}

/// The device agent (seeds 000, 001, 002): the device identity, license acquisition into a persistent store,
/// rights status against a secure clock, the keys for playback, renewal and release. One agent per data
/// directory; it talks to the license server of `satchel serve` and never depends on the server modules.
public actor Agent {
    /// The data directory (shared with the download engine when both are used).
    public nonisolated let dataDirectory: String
    let store: LicenseStore
    var identity: DeviceIdentity
    let clockReader: any ClockReader
    let logger: Logger
    private let continuation: AsyncStream<AgentEvent>.Continuation
    /// Events, in order.
    public nonisolated let events: AsyncStream<AgentEvent>

    /// Opens the agent of `dataDirectory` (made on first use: the device key, in `keyVault` or the platform's, and the store).
    public init(dataDirectory: String, clockReader: any ClockReader = SystemClockReader(), keyVault: (any DeviceKeyVault)? = nil,
                logger: Logger = Logger(label: "satchel.agent")) async throws(AgentError) {
        self.dataDirectory = dataDirectory
        identity = try DeviceIdentity.load(dataDirectory: dataDirectory, vault: keyVault)
        store = try await LicenseStore(dataDirectory: dataDirectory, logger: logger)
        self.clockReader = clockReader
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(256))
    }

    /// Closes the store and ends the event stream.
    public func close() async {
        continuation.finish()
        await store.close()
    }

    /// The device ID, once registered.
    public var deviceID: String? { identity.registration?.deviceID }

    /// The license server the device registered with.
    public var server: String? { identity.registration?.server }

    // MARK: Registration

    /// Registers the device key with the license server for the token's user; answers the device ID (the same
    /// one again when this device registers again).
    public func register(server: String, token: String, name: String? = nil, externalID: String? = nil) async throws(AgentError) -> String {
        let client = try LicenseServerClient(server: server)
        let keys = try Self.decode(PublicKeySet.self, try await client.get("/licenses/keys"), what: "the server's key set")
        let answer = try Self.decode(RegistrationAnswer.self,
                                     try await client.post("/devices", json: RegistrationRequest(publicKey: PublicKeyJWK(identity.key.publicKey),
                                                                                              name: name, externalID: externalID), token: token),
                                     what: "the registration")
        let certificate: DeviceCertificateClaims
        do {
            certificate = try SignedToken.verify(answer.certificate, as: DeviceCertificateClaims.self, key: keys.key(for: answer.certificate))
        } catch {
            throw .invalidAnswer("the device certificate does not verify: \(error.description)")
        }
        guard certificate.key.fingerprint == PublicKeyJWK(identity.key.publicKey).fingerprint, certificate.deviceID == answer.deviceID else {
            throw .invalidAnswer("the certificate is not for this device's key")
        }
        let registration = DeviceIdentity.Registration(deviceID: answer.deviceID, certificate: answer.certificate, server: server,
                                                       serverKeys: keys, name: name, externalID: externalID)
        try identity.save(registration, dataDirectory: dataDirectory)
        identity.registration = registration
        _ = try await trustedNow()
        logger.info("device registered", metadata: ["device": .string(answer.deviceID)])
        return answer.deviceID
    }

    // MARK: Rights

    /// The rights status of an asset now (`noRights` when no license is stored).
    public func rights(asset: String) async throws(AgentError) -> RightsEvaluation {
        let now = try await trustedNow()
        guard let license = try await store.license(asset: asset) else { return .none }
        return license.rights.evaluate(license.usage, at: now)
    }

    /// Every stored license with its status now.
    public func licenses() async throws(AgentError) -> [LicenseStatus] {
        let now = try await trustedNow()
        return try await store.licenses().map { LicenseStatus(license: $0, evaluation: $0.rights.evaluate($0.usage, at: now)) }
    }

    /// Releases not yet delivered to the server.
    public func owedReleases() async throws(AgentError) -> [OwedRelease] {
        try await store.owedReleases()
    }

    /// Consumes the rights as a player start does: only when the status is `valid`, starts the playback
    /// window on first use, and answers the content keys.
    public func use(asset: String) async throws(AgentError) -> [PlaybackKey] {
        var (license, now) = try await playable(asset)
        let keys = try open(license)
        if license.firstUse == nil, license.rights.playbackSeconds != nil, let now {
            license.firstUse = now
            try await store.save(license)
        }
        return keys
    }

    /// The keys of a valid license without registering a use (a player that already started).
    public func keys(asset: String) async throws(AgentError) -> [PlaybackKey] {
        try open(try await playable(asset).license)
    }

    /// The asset's license when its rights allow playback now, with the trusted time; else `notPlayable`.
    private func playable(_ asset: String) async throws(AgentError) -> (license: StoredLicense, now: Date?) {
        let now = try await trustedNow()
        guard let license = try await store.license(asset: asset) else { throw .notPlayable(.noRights) }
        let status = license.rights.evaluate(license.usage, at: now).status
        guard status == .valid else { throw .notPlayable(status) }
        return (license, now)
    }

    /// The asset an entitlement token names (its `asset` claim), read without checking its signature (the
    /// license server checks it): how `satchel play URL --token` knows which license to acquire.
    public static func assetID(inToken token: String) -> String? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = Base64URL.decode(String(parts[1])),
              let claims = try? JSONDecoder().decode([String: JSONValue].self, from: Data(payload)) else { return nil }
        return claims["asset"]?.string
    }

    // MARK: Licenses

    /// Acquires a license for `asset` from the registered server (or `server`) and stores it. A license
    /// acquired while the clock is untrusted installs, and reports `untrustedTime` until trust returns.
    public func acquire(asset: String, token: String, persistent: Bool = false, server: String? = nil) async throws(AgentError) -> StoredLicense {
        let registration = try identity.registered()
        let server = server ?? registration.server
        let nonce = Hex.encode(SecureRandom.bytes(16))
        let request = try sign(DeviceRequestClaims(certificate: registration.certificate, assetID: asset, persistent: persistent ? true : nil,
                                                   nonce: nonce, time: try await requestTime()))
        let answer = try await LicenseServerClient(server: server).post("/licenses", json: DeviceRequestEnvelope(request: request), token: token)
        let license = try await install(answer, nonce: nonce, server: server, firstUse: nil)
        logger.info("license acquired", metadata: ["asset": .string(asset), "license": .string(license.licenseID)])
        return license
    }

    /// Renews the asset's license (the rental restarts; a started playback window keeps running).
    public func renew(asset: String, token: String) async throws(AgentError) -> StoredLicense {
        guard let current = try await store.license(asset: asset) else { throw .noLicense(asset) }
        return try await renew(current, token: token)
    }

    private func renew(_ current: StoredLicense, token: String) async throws(AgentError) -> StoredLicense {
        let registration = try identity.registered()
        let client = try LicenseServerClient(server: current.server)
        let renewal = (try? SignedToken.unverifiedClaims(current.license, as: LicenseClaims.self))?.renewalURL ?? "/licenses/renew"
        let nonce = Hex.encode(SecureRandom.bytes(16))
        let request = try sign(DeviceRequestClaims(certificate: registration.certificate, licenseID: current.licenseID, nonce: nonce,
                                                   time: try await requestTime()))
        let answer = try await client.post(renewal, json: DeviceRequestEnvelope(request: request), token: token)
        let license = try await install(answer, nonce: nonce, server: current.server, firstUse: current.firstUse)
        logger.info("license renewed", metadata: ["asset": .string(current.assetID), "license": .string(current.licenseID)])
        return license
    }

    /// Deletes the asset's license at once and gives it back to the server; a release the server cannot
    /// take now is kept and delivered at the next contact. Answers true when the server took it now.
    @discardableResult
    public func release(asset: String) async throws(AgentError) -> Bool {
        guard let license = try await store.license(asset: asset) else { throw .noLicense(asset) }
        try await store.deleteOwingRelease(license, at: clockReader.read().wall)
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
    }

    /// Contacts the server: its signed time (which can restore trust in the clock), the releases owed, and the
    /// renewals due (with `token`).
    public func sync(token: String? = nil) async throws(AgentError) -> SyncReport {
        let registration = try identity.registered()
        let serverTime = try await fetchTime(server: registration.server)
        let delivered = try await deliverReleases()
        var renewed: [String] = [], pending: [String] = []
        let now = try await trustedNow()
        for license in try await store.licenses() where now.map({ license.rights.renewalDue(license.usage, at: $0) }) ?? false {
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
        return SyncReport(serverTime: serverTime, releasesDelivered: delivered.count, releasesOwed: try await store.owedReleases().count,
                          renewed: renewed, renewalsPending: pending)
    }

    // MARK: Internals

    /// The server's signed time, anchoring the secure clock.
    func fetchTime(server: String) async throws(AgentError) -> Date {
        let registration = try identity.registered()
        let nonce = Hex.encode(SecureRandom.bytes(16))
        let client = try LicenseServerClient(server: server, timeout: .seconds(10))
        let answer = try Self.decode(TimeAnswer.self, try await client.get("/time?nonce=\(nonce)"), what: "the time")
        let reading = clockReader.read()
        let claims: SignedTimeClaims
        do {
            claims = try SignedToken.verify(answer.time, as: SignedTimeClaims.self, key: registration.serverKeys.key(for: answer.time))
        } catch {
            throw .invalidAnswer("the signed time does not verify: \(error.description)")
        }
        guard claims.nonce == nonce else { throw .invalidAnswer("the signed time is not the answer to this request") }
        try await anchor(claims.time, reading)
        return claims.time
    }

    /// Delivers owed releases; answers the license IDs the server took.
    func deliverReleases() async throws(AgentError) -> [String] {
        let registration = try identity.registered()
        var delivered: [String] = []
        for owed in try await store.owedReleases() {
            let request = try sign(DeviceRequestClaims(certificate: registration.certificate, licenseID: owed.licenseID,
                                                       nonce: Hex.encode(SecureRandom.bytes(16)), time: try await requestTime()))
            do {
                let client = try LicenseServerClient(server: owed.server, timeout: .seconds(5))
                _ = try await client.post("/licenses/release", json: DeviceRequestEnvelope(request: request), token: nil)
                try await store.settleRelease(owed.licenseID, delivered: true)
                delivered.append(owed.licenseID)
                continuation.yield(.releaseDelivered(licenseID: owed.licenseID))
            } catch where !error.isRetryable && error.code == "license-server" {
                try await store.settleRelease(owed.licenseID, delivered: true)
                continuation.yield(.releaseRefused(licenseID: owed.licenseID, problem: error.problemType))
            } catch {
                try await store.settleRelease(owed.licenseID, delivered: false)
                logger.info("release still owed", metadata: ["license": .string(owed.licenseID), "problem": .string(error.problemType)])
            }
        }
        return delivered
    }

    /// Verifies a license answer (the server's signature, this device, this request's nonce, keys that open),
    /// anchors the clock to its server time and stores it.
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
        try await store.save(license)
        try await anchor(claims.serverTime, reading)
        return license
    }

    private func verify(_ token: String, _ registration: DeviceIdentity.Registration) throws(AgentError) -> LicenseClaims {
        let claims: LicenseClaims
        do {
            claims = try SignedToken.verify(token, as: LicenseClaims.self, key: registration.serverKeys.key(for: token))
        } catch {
            throw .invalidAnswer("the license does not verify: \(error.description)")
        }
        guard claims.deviceID == registration.deviceID else { throw .invalidAnswer("the license was issued to another device") }
        return claims
    }

    private func open(_ license: StoredLicense) throws(AgentError) -> [PlaybackKey] {
        let registration = try identity.registered()
        let claims = try verify(license.license, registration)
        let agreement = try identity.agreementKey
        var keys: [PlaybackKey] = []
        for sealed in claims.keys {
            do {
                let key = try sealed.open(with: agreement, licenseID: claims.licenseID, deviceID: registration.deviceID)
                keys.append(PlaybackKey(keyID: sealed.kid, key: key, iv: sealed.iv.flatMap { try? Hex.decode($0) }))
            } catch {
                throw .invalidAnswer(error.description)
            }
        }
        return keys
    }

    private func sign(_ claims: DeviceRequestClaims) throws(AgentError) -> String {
        do { return try SignedToken.sign(claims, key: identity.key) } catch { throw .storage("cannot sign with the device key") }
    }

    /// Reads the clocks, updates the secure clock (reporting a rollback once) and answers the trusted time.
    func trustedNow() async throws(AgentError) -> Date? {
        let reading = clockReader.read()
        var clock = try await store.secureClock()
        let events = clock.observe(reading)
        try await store.saveSecureClock(clock)
        report(events)
        return clock.now(reading)
    }

    /// The time a request is dated with: the secure clock's time or, while it is not trusted, the later of
    /// its floor and the wall clock, so a device clock set back does not make requests look stale.
    private func requestTime() async throws(AgentError) -> Date {
        let reading = clockReader.read()
        let clock = try await store.secureClock()
        return clock.now(reading) ?? max(clock.floor(reading) ?? reading.wall, reading.wall)
    }

    private func anchor(_ serverTime: Date, _ reading: ClockReading) async throws(AgentError) {
        var clock = try await store.secureClock()
        let events = clock.anchor(serverTime: serverTime, reading)
        try await store.saveSecureClock(clock)
        report(events)
    }

    private func report(_ events: [ClockEvent]) {
        for event in events {
            switch event {
            case .untrustedTime:
                logger.notice("the device clock went back: date-based rights are untrusted until the server's time confirms it")
                continuation.yield(.untrustedTime)
            case .trustRestored:
                logger.info("the server's time confirmed the device clock")
                continuation.yield(.trustRestored)
            }
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ data: Data, what: String) throws(AgentError) -> T {
        do { return try JSONDecoder().decode(type, from: data) } catch { throw .invalidAnswer("\(what) is not JSON of the documented shape") }
    }
}
