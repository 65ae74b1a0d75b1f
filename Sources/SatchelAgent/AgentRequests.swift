import Foundation
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import SatchelBackplane
import SatchelBytes
import SatchelRights

/// The agent's requests to its license server: each signed by the device key and dated by the server's time (a
/// clock-skew refusal fetches the server's signed time and tries once more), and a license answer verified and
/// installed with its clock anchor. It holds no state of its own: the device holds the registration, the clock its
/// trust. Runs on the agent's isolation.
final class AgentRequests {
    private let store: LicenseStore
    private let device: AgentDevice
    private let clock: AgentClock
    private let reader: any ClockReader
    private let transport: AgentTransport
    private let serverKeys: AgentServerKeys
    private let activity: AgentActivity
    private let reporter: AgentReporter

    init(store: LicenseStore, device: AgentDevice, clock: AgentClock, reader: any ClockReader, transport: AgentTransport,
         serverKeys: AgentServerKeys, activity: AgentActivity, reporter: AgentReporter) {
        self.store = store
        self.device = device
        self.clock = clock
        self.reader = reader
        self.transport = transport
        self.serverKeys = serverKeys
        self.activity = activity
        self.reporter = reporter
    }

    /// ``Agent/acquire(asset:token:persistent:server:customData:)``: a device at its most licenses asks the server for
    /// none it could not keep.
    nonisolated(nonsending) func acquire(asset: String, token: String, persistent: Bool, server: String?,
                        customData: String?) async throws(AgentError) -> StoredLicense {
        let registered = try device.registered().server
        let server = server ?? registered
        guard try await store.licenseCount() < store.licenseLimit else { throw .licenseLimit(store.licenseLimit) }
        let (answer, nonce) = try await signedPost("/licenses", server: server, token: token) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, assetID: asset, persistent: persistent ? true : nil, nonce: nonce, time: time, customData: customData)
        }
        let license = try await install(answer, nonce: nonce, server: server, firstUse: nil)
        reporter.logger.info("license acquired", metadata: ["asset": .string(asset), "license": .string(license.licenseID)])
        _ = try? await activity.record(.licenseAcquired, asset: asset, reason: persistent ? "persistent" : "streaming")
        return license
    }

    /// Renews `current` at its server (its renewal URL, else `/licenses/renew`): the rental restarts, a started
    /// playback window keeps running.
    nonisolated(nonsending) func renew(_ current: StoredLicense, token: String) async throws(AgentError) -> StoredLicense {
        let renewal = (try? SignedToken.unverifiedClaims(current.license, as: LicenseClaims.self))?.renewalURL ?? "/licenses/renew"
        let (answer, nonce) = try await signedPost(renewal, server: current.server, token: token) { registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, licenseID: current.licenseID, nonce: nonce, time: time)
        }
        let license = try await install(answer, nonce: nonce, server: current.server, firstUse: current.firstUse)
        reporter.logger.info("license renewed", metadata: ["asset": .string(current.assetID), "license": .string(current.licenseID)])
        _ = try? await activity.record(.licenseRenewed, asset: current.assetID)
        return license
    }

    /// Verifies a license answer (the server's signature, this device, this request's nonce, keys that open),
    /// and installs it with its clock anchor, in one change of the store.
    nonisolated(nonsending) func install(_ answer: Data, nonce: String, server: String, firstUse: Date?) async throws(AgentError) -> StoredLicense {
        let token = try Agent.decode(LicenseAnswer.self, answer, what: "the license").license
        try await serverKeys.learn(kid: try? SignedToken.keyID(token))
        let registration = try device.registered()
        let reading = reader.read()
        let claims = try registration.verifiedLicense(token)
        guard claims.nonce == nonce else { throw .invalidAnswer("the license is not the answer to this request") }
        let license = StoredLicense(licenseID: claims.licenseID, assetID: claims.assetID, license: token, server: server,
                                    acquired: claims.serverTime, firstUse: firstUse, persistent: claims.rights.persistent,
                                    rights: claims.rights, keyIDs: claims.keys.map(\.kid))
        _ = try device.keys(of: license)
        let digest = DeviceState.digest(of: token)
        let events = try await store.change { (state, _) throws(AgentError) -> ([ClockEvent], [LicenseStore.RowChange]) in
            let kept = state.licenses[claims.licenseID]?.firstUse ?? firstUse
            state.licenses[claims.licenseID] = DeviceState.InstalledLicense(digest: digest, firstUse: kept)
            return (state.clock.anchor(serverTime: claims.serverTime, reading), [.save(license)])
        }
        reporter.report(events)
        return license
    }

    /// Posts a request signed by the device key, dated by the server's time, to `path` of `server`; a refusal for a
    /// time too far from the server's (`clock-skew`) fetches the server's signed time and tries once more. Answers
    /// the body and the request's nonce.
    nonisolated(nonsending) func signedPost(_ path: String, server: String, token: String?, timeout: TimeAmount = .seconds(30),
                           answer: AnswerCheck = .unsigned,
                           _ claims: (DeviceIdentity.Registration, String, Date) -> DeviceRequestClaims) async throws(AgentError) -> (Data, String) {
        try await signed(server: server, route: DeviceRequestClaims.route(method: "POST", path: path), timeout: timeout, answer: answer, claims) {
            client, request throws(AgentError) in
            try await client.postAnswer(path, json: DeviceRequestEnvelope(request: request), token: token)
        }
    }

    /// A GET (or `method`) of `path` with the signed request in the `Satchel-Device-Request` header (the backplane's
    /// sync).
    nonisolated(nonsending) func signedGet(_ path: String, server: String, method: HTTPMethod = .GET,
                          timeout: TimeAmount = .seconds(30), answer: AnswerCheck = .unsigned) async throws(AgentError) -> Data {
        try await signed(server: server, route: DeviceRequestClaims.route(method: method.rawValue, path: path), timeout: timeout, answer: answer, {
            registration, nonce, time in
            DeviceRequestClaims(certificate: registration.certificate, nonce: nonce, time: time)
        }) { client, request throws(AgentError) in
            var get = HTTPClientRequest(url: client.url(path))
            get.method = method
            get.headers.add(name: Self.deviceRequestHeader, value: request)
            return try await client.exchange(get)
        }.0
    }

    /// A POST of `body` as JSON text in a ``DeviceBodyEnvelope``, the signed request naming its digest.
    nonisolated(nonsending) func signedBody(_ path: String, body: some Encodable, server: String,
                           timeout: TimeAmount = .seconds(30), answer: AnswerCheck = .unsigned) async throws(AgentError) -> Data {
        guard let data = try? JSONCoding.encoder().encode(body) else { throw .badRequest("the request cannot be encoded") }
        let text = String(decoding: data, as: UTF8.self)
        let digest = DeviceRequestClaims.digest(of: text)
        return try await signed(server: server, route: DeviceRequestClaims.route(method: "POST", path: path), timeout: timeout, answer: answer, {
            registration, nonce, time in DeviceRequestClaims(certificate: registration.certificate, nonce: nonce, time: time, bodyDigest: digest)
        }) { client, request throws(AgentError) in
            try await client.postAnswer(path, json: DeviceBodyEnvelope(request: request, body: text), token: nil)
        }.0
    }

    /// The header a GET carries its signed request in.
    static let deviceRequestHeader = "Satchel-Device-Request"

    /// Signs the claims `claims` makes (a fresh nonce, the server's time) for `route` and sends them with `send`; a
    /// `clock-skew` refusal fetches the server's signed time and tries once more.
    nonisolated(nonsending) func signed(server: String, route: String, timeout: TimeAmount, answer check: AnswerCheck,
                       _ claims: (DeviceIdentity.Registration, String, Date) -> DeviceRequestClaims,
                       send: (LicenseServerClient, String) async throws(AgentError) -> LicenseServerClient.Answer) async throws(AgentError) -> (Data, String) {
        let registration = try device.registered()
        let client = try LicenseServerClient(server: server, timeout: timeout, http: transport.client)
        var retried = false
        while true {
            let (request, nonce) = try await signedRequest(registration, server: server, route: route, claims)
            let answer: LicenseServerClient.Answer
            do {
                answer = try await send(client, request)
            } catch where error.problemType == "clock-skew" && !retried {
                retried = true
                _ = try await clock.fetchTime(server: server)
                continue
            } catch {
                if let notice = Self.credentialsNotice(error) { reporter.report(.notice(notice, detail: error.description)) }
                throw error
            }
            if case .signed = check {
                try await serverKeys.learn(kid: SignedAnswer.keyID(answer.signature))
                let keys = try device.registered().serverKeys
                do {
                    try SignedAnswer.verify(answer.signature, body: answer.body, nonce: nonce, keys: keys)
                } catch {
                    // Refused and reported: nothing of it is applied, and the server hears of it with the device's events
                    // (the route without its query string: no URL's query reaches a message or a log).
                    let named = route.split(separator: "?", maxSplits: 1).first.map(String.init) ?? route
                    _ = try? await activity.record(.answerRefused, reason: "\(named): \(error.code)")
                    throw .answerNotSigned("\(named): \(error.description)")
                }
            }
            return (answer.body, nonce)
        }
    }

    /// A request for `route` signed by the device key, with a fresh nonce and dated by the server's time; answers it
    /// and its nonce.
    nonisolated(nonsending) func signedRequest(_ registration: DeviceIdentity.Registration, server: String, route: String,
                              _ claims: (DeviceIdentity.Registration, String, Date) -> DeviceRequestClaims) async throws(AgentError) -> (String, String) {
        let nonce = Hex.encode(SecureRandom.bytes(16))
        var made = claims(registration, nonce, try await clock.requestTime(server: server))
        made.route = route
        return (try device.sign(made), nonce)
    }

    /// The notice a refused signed request raises: the device no longer registered, or its credentials (certificate,
    /// key, user) refused; nil for any other failure.
    static func credentialsNotice(_ error: AgentError) -> BackplaneNotice? {
        guard case let .server(type, status, _) = error else { return nil }
        switch type {
        case "device-unregistered": return .unregistered
        case "not-entitled" where status == 403, "missing-entitlement", "invalid-entitlement": return .invalidCredentials
        default: return status == 401 ? .invalidCredentials : nil
        }
    }

    /// Whether an answer must carry the server's ``SignedAnswer`` signature for this request: every answer the device
    /// applies from the backplane (commands, settings, grants, slots, feed items) does.
    enum AnswerCheck {
        case unsigned, signed
    }
}
