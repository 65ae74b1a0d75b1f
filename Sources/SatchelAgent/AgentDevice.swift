import Crypto
import Foundation
import SatchelBytes
import Logging
import SatchelRights

/// The device as its license server knows it: its identity (the device key, the sealed registration with the server's
/// keys, a registration found edited) and the licenses verified against that registration, kept by the digest of
/// their signed text (a license never changes under its digest). The one place the registration changes: registered,
/// a server key learnt, unregistered. Runs on the agent's isolation.
final class AgentDevice {
    let dataDirectory: String
    private var identity: DeviceIdentity
    /// Licenses already verified, by the digest of their signed text.
    private var verified: [String: LicenseClaims] = [:]
    /// The most verified licenses remembered (then forgotten at once, and verified again as they are read).
    static let verifiedLimit = 4096

    init(identity: DeviceIdentity, dataDirectory: String) {
        self.identity = identity
        self.dataDirectory = dataDirectory
    }

    /// The device key.
    var key: P256.Signing.PrivateKey { identity.key }

    /// The registration, once registered.
    var registration: DeviceIdentity.Registration? { identity.registration }

    /// Why the registration cannot be believed (edited outside Satchel), if it cannot.
    var tampered: String? { identity.tampered }

    /// The registration, or ``AgentError/notRegistered``.
    func registered() throws(AgentError) -> DeviceIdentity.Registration { try identity.registered() }

    /// The content keys of `license`, opened with the device key.
    func keys(of license: StoredLicense) throws(AgentError) -> [PlaybackKey] { try identity.keys(of: license) }

    /// Saves `registration` sealed and takes it as the device's (a registration found edited before is replaced
    /// when `trusted`: the device registered again).
    func adopt(_ registration: DeviceIdentity.Registration, trusted: Bool = false) throws(AgentError) {
        try identity.save(registration, dataDirectory: dataDirectory)
        identity.registration = registration
        if trusted { identity.tampered = nil }
        verified.removeAll()
    }

    /// Forgets the registration (the device was unregistered).
    func forget() throws(AgentError) {
        try identity.forget(dataDirectory: dataDirectory)
        identity.registration = nil
        verified.removeAll()
    }

    /// Signs a request's claims with the device key.
    func sign(_ claims: DeviceRequestClaims) throws(AgentError) -> String {
        do { return try SignedToken.sign(claims, key: identity.key) } catch { throw .storage("cannot sign with the device key") }
    }

    /// The verified claims of a signed license of this device (nil: not one).
    func claims(of license: String) -> LicenseClaims? {
        let digest = DeviceState.digest(of: license)
        if let known = verified[digest] { return known }
        guard let registration = identity.registration, let claims = try? registration.verifiedLicense(license) else { return nil }
        if verified.count >= Self.verifiedLimit { verified.removeAll() }
        verified[digest] = claims
        return claims
    }

    /// The licenses the sealed state vouches for — the row's license is exactly the one installed, and it is a
    /// license of this device the server signed — each with its rights as signed, by asset.
    func installed(_ snapshot: LicenseStore.Snapshot) -> [StoredLicense] {
        var licenses: [StoredLicense] = []
        for (id, vouched) in snapshot.state.licenses {
            guard let row = snapshot.rows[id], DeviceState.digest(of: row.license) == vouched.digest,
                  let claims = claims(of: row.license), claims.licenseID == id else { continue }
            licenses.append(StoredLicense(licenseID: id, assetID: claims.assetID, license: row.license, server: row.server, acquired: claims.serverTime,
                                          firstUse: vouched.firstUse, persistent: claims.rights.persistent, rights: claims.rights,
                                          keyIDs: claims.keys.map(\.kid)))
        }
        return licenses.sorted { ($0.assetID, $0.licenseID) < ($1.assetID, $1.licenseID) }
    }

    /// The newest installed license of an asset.
    func newest(_ asset: String, in snapshot: LicenseStore.Snapshot) -> StoredLicense? {
        installed(snapshot).filter { $0.assetID == asset }.max { $0.acquired < $1.acquired }
    }
}

/// Where the agent's events go (its event stream) and how the secure clock's changes of trust are told (the log and
/// the stream). Sendable: every role reports through its copy.
struct AgentReporter: Sendable {
    let continuation: AsyncStream<AgentEvent>.Continuation
    let logger: Logger

    func report(_ event: AgentEvent) {
        continuation.yield(event)
    }

    /// Reports the secure clock's events.
    func report(_ events: [ClockEvent]) {
        for event in events {
            switch event {
            case .untrustedTime:
                logger.notice("the device clock went back: date-based rights are untrusted until the server's time confirms it")
                report(.untrustedTime)
            case .trustRestored:
                logger.info("the server's time confirmed the device clock")
                report(.trustRestored)
            }
        }
    }
}
