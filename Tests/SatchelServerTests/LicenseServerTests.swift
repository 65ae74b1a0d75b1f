import Foundation
import Hummingbird
import CryptoExtras
import HummingbirdTesting
import JWTKit
import SatchelBytes
import SatchelFairPlay
import SatchelLicensing
import SatchelPackager
import SatchelProtection
import SatchelServer
import SatchelTestSupport
import Testing

/// `satchel serve` over real HTTP on loopback, against SQLite and, when `SATCHEL_TEST_DATABASE_URL`
/// names one (CI starts it), a real PostgreSQL.
@Suite("License server", .serialized)
struct LicenseServerTests {
    static let databases: [String] = ["sqlite"] + (ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"].map { [$0] } ?? [])
    static let secret = Array("satchel-test-secret-for-hs256-tokens-0123456789".utf8)
    static let dask = FairPlayFixtures.developmentDASk

    /// A server world: a package made by the packager, its keys imported, a KSM and a token signer.
    struct World {
        let directory: URL
        let database: LicensingDatabase
        let store: KeyStore
        let service: LicenseService
        let signer: EntitlementVerifier
        let package: URL
        let key: ContentKey
        let certificate: [UInt8]
        let assetID: String

        func token(asset: String = "movie", subject: String = "user-1", expires: TimeInterval = 600, persistent: Bool? = nil,
                   policy: PolicyOverrides? = nil) async throws -> String {
            try await signer.sign(Entitlement(subject: subject, asset: asset, expires: Date().addingTimeInterval(expires), persistent: persistent, policy: policy))
        }
    }

    /// `packaged: false` skips ffmpeg and the packager (a random key is imported) for tests that need no media.
    static func world(_ database: String, policy: AssetPolicy = AssetPolicy(leaseSeconds: 600, hdcp: .type1, offline: true),
                      packaged: Bool = true) async throws -> World {
        let directory = try TestMedia.temporaryDirectory("server")
        let package = directory.appendingPathComponent("package")
        // ffmpeg and the packager block: off the cooperative pool, so servers of other tests keep running.
        let keys = packaged ? try await TestMedia.offloaded {
            let input = try TestMedia.make("server-source", seconds: 4)
            _ = try Packager(options: PackageOptions(inputs: [input.path], output: package.path, format: .hlsTS, scheme: .aes128,
                                                     keyURI: "/keys/{kid}", segmentDuration: 2)).run()
            return try KeyFile.read(package.path + ".keys.json").contentKeys()
        } : [ContentKey.random()]
        let kek = try KeyEncryptionKey(SecretBytes.random(32))
        let url = database == "sqlite" ? nil : database
        let db = try await LicensingDatabase(dataDirectory: directory.appendingPathComponent("data").path, url: url)
        let store = FluentKeyStore(database: db.database, kek: kek)
        let assetID = "movie-\(UUID().uuidString.prefix(8))"
        try await store.importKeys(keys, assetID: assetID, fairPlayAssetID: assetID, policy: policy)
        let certificate = try FairPlayFixtures.certificate()
        let credential = try FairPlayCredential(certificate: certificate, privateKey: try FairPlayFixtures.privateKeyPEM(),
                                                dFunction: DevelopmentDFunction(dask: SecretBytes(hex: dask, count: 16)))
        let verifier = try await EntitlementVerifier(hmacSecret: secret)
        let service = LicenseService(store: store, ksm: KeySecurityModule(configuration: .init(credentials: [credential])), verifier: verifier)
        return World(directory: directory, database: db, store: store, service: service, signer: verifier, package: package,
                     key: keys[0], certificate: certificate, assetID: assetID)
    }

    @Test("the PostgreSQL suite runs: a database is configured (scripts/test starts one)")
    func postgreSQLConfigured() {
        #expect(ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"] != nil,
                "PostgreSQL is required: set SATCHEL_TEST_DATABASE_URL, or run scripts/test, which installs and starts one")
    }

    static func simulator() throws -> DeviceSimulator {
        try DeviceSimulator(certificate: try FairPlayFixtures.certificate(), dFunction: DevelopmentDFunction(dask: SecretBytes(hex: dask, count: 16)))
    }

    static func app(_ world: World) -> some ApplicationProtocol {
        LicenseServer.application(service: world.service, certificate: world.certificate, port: 0)
    }

    static func bearer(_ token: String) -> HTTPFields { [.authorization: "Bearer \(token)"] }

    static func json(_ buffer: ByteBuffer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any])
    }

    @Test("FairPlay: raw SPC, JSON, form and Apple's JSON shapes all return a CKC with the right key and policy", arguments: databases)
    func fairPlay(database: String) async throws {
        let world = try await Self.world(database)
        defer { Task { await world.database.shutdown() } }
        let simulator = try Self.simulator()
        let token = try await world.token(asset: world.assetID)
        try await Self.app(world).test(.live) { client in
            let certificate = try await client.execute(uri: "/fps/certificate", method: .get)
            #expect(certificate.status == .ok && Array(certificate.body.readableBytesView) == world.certificate)
            for shape in ["raw", "raw-as-form", "json", "form", "apple"] {
                let (spc, session) = try simulator.makeSPC(.init(
                    assetID: Array(world.assetID.utf8),
                    playbackState: MediaPlaybackState(creationDate: UInt32(Date().timeIntervalSince1970), state: .readyToStart, sessionID: 7)))
                let b64 = Data(spc).base64EncodedString()
                var ckc: [UInt8]
                switch shape {
                case "raw", "raw-as-form":  // curl --data-binary @movie.spc labels the SPC a form: it is recognised anyway
                    var headers = Self.bearer(token)
                    if shape == "raw-as-form" { headers[.contentType] = "application/x-www-form-urlencoded" }
                    let response = try await client.execute(uri: "/fps/license", method: .post, headers: headers, body: ByteBuffer(bytes: spc))
                    #expect(response.status == .ok)
                    ckc = Array(response.body.readableBytesView)
                case "json":
                    let body = try JSONSerialization.data(withJSONObject: ["spc": b64, "assetId": world.assetID, "token": token])
                    let response = try await client.execute(uri: "/fps/license", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(bytes: body))
                    ckc = Array(Data(base64Encoded: try Self.json(response.body)["ckc"] as? String ?? "") ?? Data())
                case "form":
                    let encoded = b64.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
                    let response = try await client.execute(uri: "/fps/license", method: .post,
                                                            headers: [.contentType: "application/x-www-form-urlencoded", .authorization: "Bearer \(token)"],
                                                            body: ByteBuffer(string: "spc=\(encoded)&assetId=\(world.assetID)"))
                    ckc = Array(Data(base64Encoded: try Self.json(response.body)["ckc"] as? String ?? "") ?? Data())
                default:
                    let request: [String: Any] = ["fairplay-streaming-request": ["version": 1, "streaming-keys": [["id": 1, "uri": "skd://\(world.assetID)", "spc": b64]]]]
                    let response = try await client.execute(uri: "/fps/license", method: .post, headers: [.authorization: "Bearer \(token)", .contentType: "application/json"],
                                                            body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: request)))
                    let answer = try #require((try Self.json(response.body)["fairplay-streaming-response"] as? [String: Any])?["streaming-keys"] as? [[String: Any]])
                    #expect(answer.first?["id"] as? Int == 1 && answer.first?["uri"] as? String == "skd://\(world.assetID)")
                    ckc = Array(Data(base64Encoded: answer.first?["ckc"] as? String ?? "") ?? Data())
                }
                let opened = try DeviceSimulator.openCKC(ckc, session: session)
                #expect(opened.contentKey == world.key.key, "\(shape)")
                #expect(opened.contentIV == world.key.iv)
                #expect(opened.duration == .lease(600) && opened.hdcp == .type1)
            }
            // A malformed SPC and an SPC for an unknown asset get problem+json.
            let bad = try await client.execute(uri: "/fps/license", method: .post, headers: Self.bearer(token), body: ByteBuffer(bytes: [1, 2, 3]))
            #expect(bad.status == .badRequest && bad.headers[.contentType] == "application/problem+json")
            #expect(try Self.json(bad.body)["type"] as? String == "https://satchel.dev/problems/fairplay-spc-truncated")
            let (unknown, _) = try simulator.makeSPC(.init(assetID: Array("no-such-asset".utf8)))
            let missing = try await client.execute(uri: "/fps/license", method: .post, headers: Self.bearer(try await world.token(asset: "*")), body: ByteBuffer(bytes: unknown))
            #expect(missing.status == .notFound && missing.headers[.contentType] == "application/problem+json")
        }
        let audit = try await world.store.licenses()
        #expect(audit.filter { $0.assetID == world.assetID && $0.type == "fairplay" && $0.subject == "user-1" }.count == 5)
    }

    @Test("Clear Key and AES-128 answers decrypt the package; persistent licenses follow policy and token", arguments: databases)
    func clearKeyAndAES(database: String) async throws {
        let world = try await Self.world(database)
        defer { Task { await world.database.shutdown() } }
        let token = try await world.token(asset: world.assetID)
        try await Self.app(world).test(.live) { client in
            let keyResponse = try await client.execute(uri: "/keys/\(world.key.keyID.hex)", method: .get, headers: Self.bearer(token))
            #expect(keyResponse.status == .ok)
            let key = Array(keyResponse.body.readableBytesView)
            let segment = try TestMedia.bytes(world.package.appendingPathComponent("video_0/segment_0.ts"))
            let clear = try SegmentCipher(key: SecretBytes(key)).decrypt(segment, iv: world.key.iv)
            #expect(clear.count % 188 == 0 && stride(from: 0, to: clear.count, by: 188).allSatisfy { clear[$0] == 0x47 })

            let request = ClearKey.Request(keyIDs: [world.key.keyID], type: "temporary")
            let license = try await client.execute(uri: "/clearkey/license", method: .post, headers: Self.bearer(token), body: ByteBuffer(bytes: request.json))
            #expect(license.status == .ok)
            let keys = try ClearKey.parseResponse(Array(license.body.readableBytesView))
            #expect(keys.first?.keyID == world.key.keyID && keys.first?.key.bytes == key)
            #expect(!String(buffer: license.body).contains("="), "base64url without padding")
            // A body token of another type is refused, not ignored (the header would otherwise stand in for it unseen).
            let typed = try await client.execute(uri: "/clearkey/license", method: .post, headers: Self.bearer(token),
                                                 body: ByteBuffer(string: #"{"kids":["\#(world.key.keyID.base64URL)"],"token":5}"#))
            #expect(typed.status == .badRequest && String(buffer: typed.body).contains("token"))

            let persistent = ClearKey.Request(keyIDs: [world.key.keyID], type: "persistent-license")
            let refused = try await client.execute(uri: "/clearkey/license", method: .post, headers: Self.bearer(token), body: ByteBuffer(bytes: persistent.json))
            #expect(refused.status == .forbidden, "the token does not allow persistent licenses")
            let allowed = try await client.execute(uri: "/clearkey/license", method: .post,
                                                   headers: Self.bearer(try await world.token(asset: world.assetID, persistent: true)),
                                                   body: ByteBuffer(bytes: persistent.json))
            #expect(allowed.status == .ok)
            let allowedType = try Self.json(allowed.body)["type"] as? String
            #expect(allowedType == "persistent-license")

            let metrics = try await client.execute(uri: "/metrics", method: .get)
            #expect(String(buffer: metrics.body).contains("satchel_licenses_issued_total{type=\"clearkey\"}"))
            #expect(String(buffer: metrics.body).contains("satchel_license_errors_total{type=\"not-entitled\"}"))
            #expect(try await client.execute(uri: "/health", method: .get).status == .ok)
        }
    }

    @Test("missing, forged, expired and wrong-asset tokens are refused and nothing is issued", arguments: databases)
    func tokens(database: String) async throws {
        let world = try await Self.world(database)
        defer { Task { await world.database.shutdown() } }
        let forger = try await EntitlementVerifier(hmacSecret: Array("some other secret entirely, also 32+ bytes".utf8))
        let forged = try await forger.sign(Entitlement(subject: "mallory", asset: "*", expires: Date().addingTimeInterval(600)))
        let expired = try await world.token(asset: world.assetID, expires: -60)
        let otherAsset = try await world.token(asset: "another-movie")
        try await Self.app(world).test(.live) { client in
            let uri = "/keys/\(world.key.keyID.hex)"
            let cases: [(HTTPFields, HTTPResponse.Status, String)] = [
                ([:], .unauthorized, "missing-entitlement"), (Self.bearer("not.a.jwt"), .unauthorized, "invalid-entitlement"),
                (Self.bearer(forged), .unauthorized, "invalid-entitlement"), (Self.bearer(expired), .unauthorized, "invalid-entitlement"),
                (Self.bearer(otherAsset), .forbidden, "not-entitled"),
            ]
            for (headers, status, type) in cases {
                let response = try await client.execute(uri: uri, method: .get, headers: headers)
                #expect(response.status == status, "\(type)")
                #expect(response.headers[.contentType] == "application/problem+json")
                #expect(try Self.json(response.body)["type"] as? String == "https://satchel.dev/problems/\(type)")
                #expect(response.body.readableBytes < 400 && !String(buffer: response.body).contains(Hex.encode(world.key.key.bytes)))
            }
            let unknown = try await client.execute(uri: "/keys/\(String(repeating: "0", count: 32))", method: .get, headers: Self.bearer(try await world.token(asset: "*")))
            #expect(unknown.status == .notFound)
        }
        #expect(try await world.store.licenses().filter { $0.assetID == world.assetID }.isEmpty, "nothing was issued")
    }

    @Test("a Sync SPC over HTTP is answered and its content ID and duration are recorded", arguments: databases)
    func syncSPC(database: String) async throws {
        let world = try await Self.world(database)
        defer { Task { await world.database.shutdown() } }
        let contentID = Array(repeating: UInt8(0x5A), count: 16)
        let (spc, session) = try Self.simulator().makeSPC(.init(assetID: Array(world.assetID.utf8),
                                                               sync: SyncInfo(contentID: contentID, durationToExpiry: 4321)))
        let token = try await world.token(asset: world.assetID, subject: "device-7")
        try await Self.app(world).test(.live) { client in
            let response = try await client.execute(uri: "/fps/license", method: .post, headers: Self.bearer(token), body: ByteBuffer(bytes: spc))
            #expect(response.status == .ok)
            _ = try DeviceSimulator.openCKC(Array(response.body.readableBytesView), session: session)
        }
        let reports = try await world.store.syncReports()
        #expect(reports.contains { $0.contentID == Hex.encode(contentID) && $0.durationToExpiry == 4321 && $0.subject == "device-7" })
        #expect(try await world.store.licenses().contains { $0.assetID == world.assetID && $0.type == "fairplay-sync" })
    }

    @Test("the key cache serves repeated lookups and forgets deleted and re-imported keys at once")
    func cacheInvalidation() async throws {
        let world = try await Self.world("sqlite")
        defer { Task { await world.database.shutdown() } }
        #expect(try await world.store.key(id: world.key.keyID).key == world.key)
        #expect(try await world.store.key(asset: world.assetID).key == world.key)  // cached now
        #expect(try await world.store.delete(world.assetID))
        await #expect(throws: LicensingError.unknownAsset(world.key.keyID.hex)) { try await world.store.key(id: world.key.keyID) }
        await #expect(throws: LicensingError.self) { try await world.store.key(asset: world.assetID) }
        try await world.store.importKeys([world.key], assetID: world.assetID, fairPlayAssetID: nil, policy: AssetPolicy(rentalSeconds: 5))
        #expect(try await world.store.key(asset: world.assetID).policy.rentalSeconds == 5, "a re-import is seen at once")
    }

    @Test("policy windows: licenses are refused before not-before and after not-after")
    func windows() async throws {
        let world = try await Self.world("sqlite", policy: AssetPolicy(notBefore: Date().addingTimeInterval(3600)))
        defer { Task { await world.database.shutdown() } }
        await #expect(throws: LicensingError.self) { try await world.service.aes128Key(world.key.keyID, token: try await world.token(asset: world.assetID)) }
        let expired = try await Self.world("sqlite", policy: AssetPolicy(notAfter: Date().addingTimeInterval(-3600)))
        defer { Task { await expired.database.shutdown() } }
        await #expect(throws: LicensingError.self) { try await expired.service.aes128Key(expired.key.keyID, token: try await expired.token(asset: expired.assetID)) }
    }

    @Test("a restart keeps every key and policy, and the database file never holds a plaintext content key")
    func restartAndAtRest() async throws {
        let directory = try TestMedia.temporaryDirectory("restart")
        let data = directory.appendingPathComponent("data").path
        let kek = try KeyEncryptionKey.load(file: nil, dataDirectory: data, environment: [:])
        #expect(kek.created != nil)
        let key = ContentKey.random()
        let first = try await LicensingDatabase(dataDirectory: data, url: nil)
        try await FluentKeyStore(database: first.database, kek: kek.kek).importKeys([key], assetID: "kept", fairPlayAssetID: "kept-fps",
                                                                               policy: AssetPolicy(rentalSeconds: 99, offline: true))
        await first.shutdown()
        let reloaded = try KeyEncryptionKey.load(file: nil, dataDirectory: data, environment: [:])
        #expect(reloaded.created == nil)
        let second = try await LicensingDatabase(dataDirectory: data, url: nil)
        let store = FluentKeyStore(database: second.database, kek: reloaded.kek)
        let stored = try await store.key(asset: "kept-fps")
        #expect(stored.key == key && stored.policy.rentalSeconds == 99 && stored.policy.offline)
        #expect(try await store.allSummaries().map(\.keyID) == [key.keyID.hex])
        await second.shutdown()
        let file = try TestMedia.bytes(URL(fileURLWithPath: data).appendingPathComponent("satchel.sqlite"))
        #expect(!contains(file, key.key.bytes), "no plaintext content key in the database file")
        #expect(!String(decoding: file, as: UTF8.self).contains(Hex.encode(key.key.bytes)))
        let wrongKEK = try KeyEncryptionKey(SecretBytes.random(32))
        let third = try await LicensingDatabase(dataDirectory: data, url: nil)
        await #expect(throws: LicensingError.self) { try await FluentKeyStore(database: third.database, kek: wrongKEK).key(asset: "kept") }
        await third.shutdown()
    }

    func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}

@Suite("Entitlement keys")
struct EntitlementKeyTests {
    @Test("a JWKS with an HS256 key verifies tokens; short, unknown or empty key sets are configuration errors")
    func jwks() async throws {
        let secret = Array("a JWKS shared secret of at least 32 bytes!".utf8)
        let jwks = #"{"keys":[{"kty":"oct","kid":"hs","k":"\#(Base64URL.encode(secret))"}]}"#
        let verifier = try await EntitlementVerifier(jwks: Data(jwks.utf8))
        let signer = try await EntitlementVerifier(hmacSecret: secret)
        let token = try await signer.sign(Entitlement(subject: "s", asset: "a", expires: Date().addingTimeInterval(60)))
        #expect(try await verifier.verify(token, now: Date()).asset == "a")
        for bad in [#"{"keys":[{"kty":"oct","k":"c2hvcnQ"}]}"#, #"{"keys":[{"kty":"XYZ"}]}"#, #"{"keys":[]}"#, "nonsense"] {
            await #expect(throws: LicensingError.self) { try await EntitlementVerifier(jwks: Data(bad.utf8)) }
        }
        await #expect(throws: LicensingError.self) { try await EntitlementVerifier(hmacSecret: [1, 2, 3]) }
    }
}

@Suite("Entitlement keys: ES256 and RS256")
struct AsymmetricEntitlementTests {
    @Test("a JWKS with EC P-256 and RSA public keys verifies ES256 and RS256 tokens by kid; other keys' tokens fail")
    func asymmetric() async throws {
        let ec = ES256PrivateKey()
        let rsa = try Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        let (x, y) = try #require(ec.publicKey.parameters)
        let primitives = try rsa.publicKey.getKeyPrimitives()
        let jwks: [String: Any] = ["keys": [
            ["kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": "ec", "alg": "ES256"],
            ["kty": "RSA", "n": Base64URL.encode(Array(primitives.modulus)), "e": Base64URL.encode(Array(primitives.publicExponent)),
             "kid": "rsa", "alg": "RS256"],
        ]]
        let verifier = try await EntitlementVerifier(jwks: try JSONSerialization.data(withJSONObject: jwks))
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: ec, kid: "ec")
        await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: "rsa")
        let claims = Entitlement(subject: "device-9", asset: "film", expires: Date().addingTimeInterval(300))
        for kid in ["ec", "rsa"] {
            let token = try await signers.sign(claims, kid: JWKIdentifier(string: kid))
            #expect(try await verifier.verify(token, now: Date()).sub.value == "device-9", "\(kid)")
        }
        let stranger = JWTKeyCollection()
        await stranger.add(ecdsa: ES256PrivateKey(), kid: "ec")
        let forged = try await stranger.sign(claims, kid: JWKIdentifier(string: "ec"))
        await #expect(throws: LicensingError.self) { try await verifier.verify(forged, now: Date()) }
    }
}
