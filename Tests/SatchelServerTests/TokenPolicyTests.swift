import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import SatchelBytes
import SatchelFairPlay
import SatchelLicensing
import SatchelProtection
import SatchelRights
import SatchelServer
import SatchelTestSupport
import Testing

/// A token's `policy` claim (its per-token overrides of the asset's policy) reaches the license of every type that
/// carries rights: a FairPlay CKC, a Clear Key license's expiry, a device license's rights. (An HLS AES-128 key is a
/// plain key with no rights to carry.)
@Suite("Token policy overrides, end to end on each license type")
struct TokenPolicyTests {
    static let assetPolicy = AssetPolicy(leaseSeconds: 600, rentalSeconds: 3600, hdcp: .type1, offline: true)
    static let overrides = PolicyOverrides(leaseSeconds: 120, rentalSeconds: 300, hdcp: HDCPRequirement.none)

    @Test("FairPlay over HTTP: the CKC's lease, rental and HDCP are the token's; Clear Key over HTTP: the license ends with the token's lease")
    func overHTTP() async throws {
        let world = try await LicenseServerTests.world("sqlite", policy: Self.assetPolicy, packaged: false)
        defer { Task { await world.database.shutdown() } }
        let plain = try await world.token(asset: world.assetID)
        let narrowed = try await world.token(asset: world.assetID, policy: Self.overrides)
        let simulator = try LicenseServerTests.simulator()
        try await LicenseServerTests.app(world).test(.live) { client in
            var ckcs: [CKC] = []
            for token in [plain, narrowed] {
                let (spc, session) = try simulator.makeSPC(.init(assetID: Array(world.assetID.utf8),
                                                                 playbackState: .init(creationDate: 1, state: .readyToStart, sessionID: 1)))
                let answer = try await client.execute(uri: "/fps/license", method: .post, headers: LicenseServerTests.bearer(token), body: ByteBuffer(bytes: spc))
                #expect(answer.status == .ok)
                ckcs.append(try DeviceSimulator.openCKC(Array(answer.body.readableBytesView), session: session))
            }
            #expect(ckcs[0].duration?.leaseSeconds == 600 && ckcs[0].duration?.rentalSeconds == 3600 && ckcs[0].hdcp == .type1, "the asset's policy")
            #expect(ckcs[1].duration?.leaseSeconds == 120 && ckcs[1].duration?.rentalSeconds == 300 && ckcs[1].hdcp == HDCPRequirement.none, "the token's")

            let body = ByteBuffer(string: #"{"kids":["\#(Base64URL.encode(world.key.keyID.bytes))"],"type":"temporary"}"#)
            var seconds: [Double] = []
            for token in [plain, narrowed] {
                let answer = try await client.execute(uri: "/clearkey/license", method: .post, headers: LicenseServerTests.bearer(token), body: body)
                #expect(answer.status == .ok)
                let expires = answer.headers[HTTPField.Name("Satchel-License-Expires")!].flatMap(HTTPDate.parse) ?? 0
                seconds.append(Double(expires) - Date().timeIntervalSince1970)
            }
            #expect(seconds[0] > 500 && seconds[0] <= 601, "the asset's 600 s lease: \(seconds)")
            #expect(seconds[1] > 60 && seconds[1] <= 121, "the token's 120 s lease: \(seconds)")
        }
    }

    @Test("device licenses: the rights carry the token's rental and HDCP, not the asset's")
    func deviceLicense() async throws {
        let world = try await DeviceLicensingTests.world("token-policy", policy: Self.assetPolicy)
        defer { Task { await world.database.shutdown() } }
        let keys = try await world.licensing.keySet()
        var rights: [Rights] = []
        for overrides in [nil, Self.overrides] {
            let token = try await world.verifier.sign(Entitlement(subject: "user-1", asset: "*", expires: world.clock.now.addingTimeInterval(3600),
                                                                  persistent: true, policy: overrides))
            let (_, certificate) = try await world.licensing.register(PublicKeyJWK(world.device.publicKey), token: token, name: nil, externalID: nil)
            let request = try DeviceLicensingTests().request(world, certificate: certificate, asset: "movie")
            let license = try await world.licensing.acquire(request, token: token, renewalURL: nil)
            rights.append(try SignedToken.verify(license, as: LicenseClaims.self, key: try keys.keys[0].signingKey()).rights)
        }
        #expect(rights[0].validitySeconds == 3600 && rights[0].output.hdcp == .type1, "the asset's policy: \(rights[0])")
        #expect(rights[1].validitySeconds == 300 && rights[1].output.hdcp == HDCPLevel.none, "the token's: \(rights[1])")
    }
}
