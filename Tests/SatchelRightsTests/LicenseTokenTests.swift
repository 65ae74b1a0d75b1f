import Crypto
import Foundation
import SatchelBytes
import SatchelRights
import Testing

@Suite struct LicenseTokenTests {
    let server = P256.Signing.PrivateKey()

    @Test func aSignedTokenVerifiesOnlyWithItsKeyAndUntouched() throws {
        let claims = SignedTimeClaims(time: Date(timeIntervalSince1970: 1_800_000_000.5), nonce: "n1")
        let token = try SignedToken.sign(claims, key: server, kid: "server-1")
        #expect(try SignedToken.verify(token, as: SignedTimeClaims.self, key: server.publicKey) == claims)
        #expect(try SignedToken.keyID(token) == "server-1")
        #expect(throws: RightsError.self) { try SignedToken.verify(token, as: SignedTimeClaims.self, key: P256.Signing.PrivateKey().publicKey) }
        // Another payload under the same signature.
        let parts = token.split(separator: ".").map(String.init)
        let forged = try SignedToken.sign(SignedTimeClaims(time: .distantFuture, nonce: "n1"), key: P256.Signing.PrivateKey())
        let spliced = parts[0] + "." + forged.split(separator: ".")[1] + "." + parts[2]
        do {
            _ = try SignedToken.verify(spliced, as: SignedTimeClaims.self, key: server.publicKey)
            Issue.record("a spliced payload verified")
        } catch {
            #expect(error.code == "bad-signature")
        }
    }

    @Test func malformedTokensAreNamed() {
        let good = (try? SignedToken.sign(SignedTimeClaims(time: Date(), nonce: nil), key: server)) ?? ""
        let cases = ["", "a.b", "a..c", ".b.c", "a.b.", "a.b.c.d", "...", "!!!.e30.AAAA", good + ".x", good + ".", "." + good,
                     good.replacingOccurrences(of: ".", with: ".\u{301}"), String(repeating: "a", count: SignedToken.maximumLength + 1)]
        #expect((try? SignedToken.verify(good, as: SignedTimeClaims.self, key: server.publicKey)) != nil)
        for token in cases {
            do {
                _ = try SignedToken.verify(token, as: SignedTimeClaims.self, key: server.publicKey)
                Issue.record("\(token.prefix(20)) verified")
            } catch {
                #expect(error.code == "malformed-token")
            }
        }
    }

    @Test func wrongClaimsAreMalformedNotTrusted() throws {
        let token = try SignedToken.sign(["time": "yesterday"], key: server)
        do {
            _ = try SignedToken.verify(token, as: SignedTimeClaims.self, key: server.publicKey)
            Issue.record("claims of the wrong shape decoded")
        } catch {
            #expect(error.code == "malformed-token")
            #expect(error.description.contains("time"))
        }
    }

    @Test func aJWKRoundTripsAndAKeySetFindsTheNamedKey() throws {
        let jwk = PublicKeyJWK(server.publicKey, kid: "server-1", use: "sig", alg: "ES256")
        #expect(try jwk.signingKey().rawRepresentation == server.publicKey.rawRepresentation)
        let other = P256.Signing.PrivateKey()
        let set = PublicKeySet(keys: [PublicKeyJWK(other.publicKey, kid: "old"), jwk])
        let token = try SignedToken.sign(SignedTimeClaims(time: Date(), nonce: nil), key: server, kid: "server-1")
        #expect(try set.key(for: token).rawRepresentation == server.publicKey.rawRepresentation)
        let unnamed = try SignedToken.sign(SignedTimeClaims(time: Date(), nonce: nil), key: server)
        #expect(throws: RightsError.self) { try set.key(for: unnamed) }
        var bad = jwk
        bad.x = Base64URL.encode([UInt8](repeating: 1, count: 32))
        #expect(throws: RightsError.badKey("the point is not on P-256")) { try bad.signingKey() }
        bad.crv = "P-384"
        #expect(throws: RightsError.self) { try bad.signingKey() }
    }

    @Test func aSealedKeyOpensOnlyForItsDeviceLicenseAndKeyID() throws {
        let device = P256.Signing.PrivateKey()
        let agreement = try P256.KeyAgreement.PrivateKey(rawRepresentation: device.rawRepresentation)
        let recipient = try PublicKeyJWK(device.publicKey).agreementKey()
        let key = SecretBytes(Array(0..<16))
        let sealed = try SealedKey.seal(key, kid: "00112233445566778899aabbccddeeff", iv: [UInt8](repeating: 7, count: 16), to: recipient,
                                        licenseID: "L1", deviceID: "D1")
        #expect(try sealed.open(with: agreement, licenseID: "L1", deviceID: "D1") == key)
        let json = String(decoding: try JSONEncoder().encode(sealed), as: UTF8.self)
        #expect(!json.contains(Hex.encode(key.bytes)) && !json.contains(Base64URL.encode(key.bytes)))
        let stranger = P256.KeyAgreement.PrivateKey()
        #expect(throws: RightsError.self) { try sealed.open(with: stranger, licenseID: "L1", deviceID: "D1") }
        #expect(throws: RightsError.self) { try sealed.open(with: agreement, licenseID: "L2", deviceID: "D1") }
        #expect(throws: RightsError.self) { try sealed.open(with: agreement, licenseID: "L1", deviceID: "D2") }
        var moved = sealed
        moved.kid = "ffeeddccbbaa99887766554433221100"
        #expect(throws: RightsError.self) { try moved.open(with: agreement, licenseID: "L1", deviceID: "D1") }
    }

    @Test func aLicenseRoundTripsWithItsRights() throws {
        let rights = Rights(start: Date(timeIntervalSince1970: 1_800_000_000), end: Date(timeIntervalSince1970: 1_800_086_400),
                            playbackSeconds: 7200, persistent: true, renewalSeconds: 3600, output: OutputControls(hdcp: .type1, airPlay: false))
        let claims = LicenseClaims(licenseID: "L1", deviceID: "D1", assetID: "movie", keys: [], rights: rights,
                                   serverTime: Date(timeIntervalSince1970: 1_799_999_000), renewalURL: "http://127.0.0.1/licenses/renew", nonce: "n")
        let token = try SignedToken.sign(claims, key: server, kid: "k")
        #expect(try SignedToken.verify(token, as: LicenseClaims.self, key: server.publicKey) == claims)
        #expect(try SignedToken.unverifiedClaims(token, as: LicenseClaims.self).rights.output.hdcp == .type1)
    }
}
