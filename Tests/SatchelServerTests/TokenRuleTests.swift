import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import SatchelBytes
import SatchelFairPlay
import SatchelHTTP
import SatchelLicensing
import SatchelProtection
import SatchelServer
import SatchelTestSupport
import Testing

/// Entitlement tokens checked claim by claim, one rule for header and body tokens, and errors that
/// say what is wrong without echoing what they should not.
@Suite("License server: token rules and errors")
struct TokenRuleTests {
    static let secret = LicenseServerTests.secret

    /// An HS256 token over `header` and `claims` exactly as given (so malformed ones can be made).
    static func token(header: [String: Any] = ["alg": "HS256", "typ": "JWT"], claims: [String: Any]) throws -> String {
        func part(_ object: [String: Any]) throws -> String {
            Base64URL.encode(Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])))
        }
        let input = try part(header) + "." + part(claims)
        let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: secret))
        return input + "." + Base64URL.encode(Array(mac))
    }

    static func claims(_ asset: String, _ extra: [String: Any] = [:]) -> [String: Any] {
        var claims: [String: Any] = ["sub": "user-1", "asset": asset, "exp": Int(Date().timeIntervalSince1970) + 600]
        claims.merge(extra) { $1 }
        return claims
    }

    @Test("nbf, aud, iss, an unknown kid, crit headers and malformed claims are refused, each with its own message")
    func claimByClaim() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let jwks = #"{"keys":[{"kty":"oct","kid":"backend","k":"\#(Base64URL.encode(Self.secret))"}]}"#
        let verifier = try await EntitlementVerifier(jwks: Data(jwks.utf8), audience: "satchel", issuer: "https://backend.example")
        let service = LicenseService(store: world.store, ksm: world.service.ksm, verifier: verifier)
        let app = LicenseServer.application(service: service, certificate: world.certificate, port: 0)
        let now = Int(Date().timeIntervalSince1970)
        let good: [String: Any] = ["aud": ["other", "satchel"], "iss": "https://backend.example"]
        let kid: [String: Any] = ["alg": "HS256", "kid": "backend"]
        let cases: [(String, [String: Any], [String: Any], String?)] = [
            ("valid", kid, Self.claims(world.assetID, good), nil),
            ("nbf in the future", kid, Self.claims(world.assetID, good.merging(["nbf": now + 3600]) { $1 }), "not valid yet"),
            ("no aud", kid, Self.claims(world.assetID, ["iss": "https://backend.example"]), "audience"),
            ("another iss", kid, Self.claims(world.assetID, good.merging(["iss": "https://evil.example"]) { $1 }), "issuer"),
            ("unknown kid", ["alg": "HS256", "kid": "elsewhere"], Self.claims(world.assetID, good), "kid"),
            ("crit header", ["alg": "HS256", "kid": "backend", "crit": ["exp"]], Self.claims(world.assetID, good), "critical"),
            ("string exp", kid, Self.claims(world.assetID, good.merging(["exp": "tomorrow"]) { $1 }), #"claim "exp" must be a number"#),
            ("expired", kid, Self.claims(world.assetID, good.merging(["exp": now - 60]) { $1 }), "expired"),
            ("persistent as text", kid, Self.claims(world.assetID, good.merging(["persistent": "yes"]) { $1 }), #"claim "persistent""#),
        ]
        let tokens = try cases.map { (name: $0.0, token: try Self.token(header: $0.1, claims: $0.2), message: $0.3) }
        try await app.test(.live) { client in
            for (name, token, message) in tokens {
                let response = try await client.execute(uri: "/keys/\(world.key.keyID.hex)", method: .get, headers: [.authorization: "Bearer \(token)"])
                guard let message else {
                    #expect(response.status == .ok, "\(name)")
                    continue
                }
                #expect(response.status == .unauthorized, "\(name)")
                let detail = try LicenseServerTests.json(response.body)["detail"] as? String ?? ""
                #expect(detail.contains(message), "\(name): \(detail)")
            }
        }
    }

    @Test("the Authorization header wins over a body token, on every endpoint that takes one")
    func headerWins() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let good = try await world.token(asset: world.assetID)
        let bad = try await world.token(asset: "another-movie")
        let body = ClearKeyBody(kids: [Base64URL.encode(world.key.keyID.bytes)])
        try await LicenseServerTests.app(world).test(.live) { client in
            for (header, bodyToken, status) in [(good, bad, HTTPResponse.Status.ok), (bad, good, .forbidden), (nil, good, .ok)] {
                var fields: HTTPFields = [.contentType: "application/json"]
                if let header { fields[.authorization] = "Bearer \(header)" }
                let json = try JSONEncoder().encode(ClearKeyBody(kids: body.kids, token: bodyToken))
                let response = try await client.execute(uri: "/clearkey/license", method: .post, headers: fields, body: ByteBuffer(bytes: json))
                #expect(response.status == status)
            }
            // FairPlay's JSON shape follows the same rule.
            let (spc, _) = try LicenseServerTests.simulator().makeSPC(.init(assetID: Array(world.assetID.utf8)))
            let request = try JSONSerialization.data(withJSONObject: ["spc": Data(spc).base64EncodedString(), "token": good])
            let fairPlay = try await client.execute(uri: "/fps/license", method: .post,
                                                    headers: [.contentType: "application/json", .authorization: "Bearer \(bad)"], body: ByteBuffer(bytes: request))
            #expect(fairPlay.status == .forbidden)
        }
    }

    struct ClearKeyBody: Codable {
        var kids: [String]
        var type = "temporary"
        var token: String?
    }

    @Test("FairPlay without credentials: 404 problem+json on every FairPlay route, before any token check")
    func fairPlayNotConfigured() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let service = LicenseService(store: world.store, ksm: nil, verifier: world.signer)
        try await LicenseServer.application(service: service, certificate: nil, port: 0).test(.live) { client in
            for (uri, method) in [("/fps/license", HTTPRequest.Method.post), ("/fps/certificate", .get)] {
                let response = try await client.execute(uri: uri, method: method, body: ByteBuffer(bytes: [1, 2, 3]))
                #expect(response.status == .notFound && response.headers[.contentType] == "application/problem+json")
                #expect(try LicenseServerTests.json(response.body)["type"] as? String == "https://satchel.dev/problems/fairplay-not-configured")
            }
        }
    }

    @Test("an SPC naming an unknown asset gets 404 without the decrypted asset ID in the answer")
    func noEcho() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let secretName = "decrypted-asset-name-\(UUID().uuidString)"
        let (spc, _) = try LicenseServerTests.simulator().makeSPC(.init(assetID: Array(secretName.utf8)))
        try await LicenseServerTests.app(world).test(.live) { client in
            let response = try await client.execute(uri: "/fps/license", method: .post,
                                                    headers: LicenseServerTests.bearer(try await world.token(asset: "*")), body: ByteBuffer(bytes: spc))
            #expect(response.status == .notFound)
            #expect(!String(buffer: response.body).contains(secretName) && !String(buffer: response.body).contains(Hex.encode(Array(secretName.utf8))))
        }
    }

    @Test("refusals are logged at a bounded rate, and the next line says how many were left out")
    func boundedLog() {
        let log = RateLimitedLog(perSecond: 10)
        let start = Date()
        var written: [Int] = []
        for _ in 0..<1000 { log.log(now: start) { written.append($0) } }
        #expect(written == Array(repeating: 0, count: 10))
        log.log(now: start.addingTimeInterval(1.5)) { written.append($0) }
        #expect(written.last == 990)
    }
}
