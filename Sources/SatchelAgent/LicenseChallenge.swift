import Foundation
import SatchelBytes
import SatchelRights

/// A license request the app sends its own way — through its own backend, with its cookies, behind a portal — instead
/// of the agent sending it (delegated license acquisition). POST ``body`` to ``url`` with the user's entitlement
/// token in `Authorization: Bearer`, and hand the answer's body to ``DelegatedLicenses/install(_:)``. The request is
/// signed by the device key for this device only, and the license server takes it within a few minutes of
/// ``issued``; each challenge is answered once.
public struct LicenseChallenge: Codable, Sendable, Equatable {
    /// The license server's acquisition URL.
    public var url: String
    /// The JSON body to POST, as it is (`{"request": …}`: the signed device request).
    public var body: String
    /// The asset.
    public var assetID: String
    /// Whether a persistent (offline) license is asked for.
    public var persistent: Bool
    /// When it was made, by the license server's clock as the device knows it.
    public var issued: Date
}

/// A challenge handed to the app and not yet answered, as the sealed state keeps it: the answer must repeat its nonce.
struct PendingChallenge: Codable, Sendable, Equatable {
    var nonce: String
    var assetID: String
    var server: String
    var issued: Date

    /// The most challenges kept waiting; an older one is forgotten (its answer is then refused).
    static let kept = 16
    /// How long a challenge waits for its answer: the license server takes its request for five minutes either side
    /// of its date, so an answer after an hour is no longer one to this challenge.
    static let lifetime: TimeInterval = 3600
}

/// Delegated acquisition, on the agent's isolation: a challenge made and remembered (sealed), an answer installed
/// only when it answers a challenge still waiting, once.
enum AgentDelegation {
    static func challenge(_ agent: isolated Agent, asset: String, persistent: Bool, server: String?, customData: String?) async throws(AgentError) -> LicenseChallenge {
        guard !asset.isEmpty, asset.utf8.count <= 200 else { throw .badRequest("an asset ID is 1 to 200 bytes") }
        let registration = try agent.device.registered()
        let server = server ?? registration.server
        let client = try LicenseServerClient(server: server, http: agent.transport.client)
        let route = DeviceRequestClaims.route(method: "POST", path: "/licenses")
        let issued = try await agent.clock.requestTime(server: server)
        let (request, nonce) = try await agent.requests.signedRequest(registration, server: server, route: route) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, assetID: asset, persistent: persistent ? true : nil, nonce: nonce, time: time,
                                customData: customData)
        }
        guard let body = try? JSONCoding.encoder().encode(DeviceRequestEnvelope(request: request)) else { throw .badRequest("the request cannot be encoded") }
        let pending = PendingChallenge(nonce: nonce, assetID: asset, server: server, issued: agent.clockReader.read().wall)
        try await agent.store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
            var waiting = (state.challenges ?? []).filter { abs(pending.issued.timeIntervalSince($0.issued)) < PendingChallenge.lifetime }
            waiting.append(pending)
            state.challenges = Array(waiting.suffix(PendingChallenge.kept))
            return ((), [])
        }
        agent.reporter.logger.info("license challenge made", metadata: ["asset": .string(asset)])
        return LicenseChallenge(url: client.url("/licenses"), body: String(decoding: body, as: UTF8.self), assetID: asset, persistent: persistent,
                                issued: issued)
    }

    static func install(_ agent: isolated Agent, _ answer: Data) async throws(AgentError) -> StoredLicense {
        let token = try Agent.decode(LicenseAnswer.self, answer, what: "the license answer").license
        guard let unverified = try? SignedToken.unverifiedClaims(token, as: LicenseClaims.self) else {
            throw .invalidAnswer("the license answer holds no license")
        }
        let nonce = unverified.nonce
        // Taken before the license is checked: an answer is installed once, and a failed one needs a new challenge.
        let now = agent.clockReader.read().wall
        let pending = try await agent.store.change { (state, _) throws(AgentError) -> (PendingChallenge?, [LicenseStore.RowChange]) in
            var waiting = state.challenges ?? []
            let found = waiting.firstIndex { ConstantTime.equals(Array($0.nonce.utf8), Array(nonce.utf8)) }.map { waiting.remove(at: $0) }
            state.challenges = waiting
            return (found, [])
        }
        guard let pending, abs(now.timeIntervalSince(pending.issued)) < PendingChallenge.lifetime else {
            throw .invalidAnswer("the license answers no challenge this device is waiting on (already installed, too old, or made elsewhere): make a new challenge")
        }
        guard unverified.assetID == pending.assetID else { throw .invalidAnswer("the license is for another asset than the challenge's") }
        // Verified here: the server's signature, this device, the challenge's nonce, keys that open.
        let license = try await agent.requests.install(answer, nonce: pending.nonce, server: pending.server, firstUse: nil)
        agent.reporter.logger.info("license installed", metadata: ["asset": .string(license.assetID), "license": .string(license.licenseID)])
        _ = try? await agent.activityLog.record(.licenseAcquired, asset: license.assetID, reason: license.persistent ? "persistent" : "streaming",
                                            seconds: nil, detail: nil)
        return license
    }
}

/// How an app sends a license challenge its own way (delegated acquisition): its own HTTP stack, its cookies, its
/// backend in between. Answers the license server's answer's body as it came.
public protocol LicenseChallengeSending: Sendable {
    /// Sends `challenge` (POST its body to its URL, with the user's entitlement token) and answers the body of the answer.
    func send(_ challenge: LicenseChallenge) async throws -> Data
}

/// Delegated license acquisition, as an app calls it (`agent.delegated`): the license request made but not sent, the
/// answer installed; or both around the app's own ``LicenseChallengeSending``.
public struct DelegatedLicenses: Sendable {
    let agent: Agent

    /// A license request for `asset` the app sends its own way: POST the challenge's body to its URL with the user's
    /// token, then ``install(_:)`` the answer. Nothing is sent by the agent.
    public func challenge(asset: String, persistent: Bool = false, server: String? = nil, customData: String? = nil) async throws(AgentError) -> LicenseChallenge {
        try await AgentDelegation.challenge(agent, asset: asset, persistent: persistent, server: server, customData: customData)
    }

    /// Installs the license server's answer to a ``challenge(asset:persistent:server:customData:)`` (the answer's
    /// body as it came): verified as `Agent.acquire` verifies a license, and only when it answers a challenge of
    /// this device still waiting, once.
    public func install(_ answer: Data) async throws(AgentError) -> StoredLicense {
        try await AgentDelegation.install(agent, answer)
    }

    /// Acquires a license for `asset` through the app's own `sender`: a challenge made, sent by the app, its answer
    /// installed.
    public func acquire(asset: String, persistent: Bool = false, customData: String? = nil, via sender: some LicenseChallengeSending) async throws -> StoredLicense {
        let challenge = try await challenge(asset: asset, persistent: persistent, customData: customData)
        return try await install(try await sender.send(challenge))
    }
}
