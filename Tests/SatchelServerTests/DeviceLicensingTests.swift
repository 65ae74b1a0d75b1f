import Crypto
import Foundation
import SatchelBytes
@testable import SatchelLicensing
import FluentKit
import SatchelProtection
import SatchelRights
import SatchelSystem
import SatchelTestSupport
import Testing

/// The server half of device licenses with values and a clock the test moves: renewal, release, requests by
/// key ID, signatures, signed time.
@Suite struct DeviceLicensingTests {
    struct World {
        let licensing: DeviceLicensing
        let clock: ManualClock
        let database: LicensingDatabase
        let verifier: EntitlementVerifier
        let key: ContentKey
        let device = P256.Signing.PrivateKey()
    }

    static func world(_ name: String, policy: AssetPolicy) async throws -> World {
        let directory = try TestMedia.temporaryDirectory(name)
        let database = try await LicensingDatabase(dataDirectory: directory.path, url: nil)
        let kek = try KeyEncryptionKey(SecretBytes.random(32))
        let store = FluentKeyStore(database: database.database, kek: kek)
        let key = ContentKey.random()
        try await store.importKeys([key], assetID: "movie", fairPlayAssetID: nil, policy: policy)
        let clock = ManualClock()
        let verifier = try await EntitlementVerifier(hmacSecret: Array("a secret of thirty-two bytes at least!".utf8))
        let service = LicenseService(store: store, ksm: nil, verifier: verifier, clock: clock)
        return World(licensing: DeviceLicensing(service: service, registry: DeviceRegistry(database: database.database, kek: kek)),
                     clock: clock, database: database, verifier: verifier, key: key)
    }

    func token(_ world: World, persistent: Bool = true) async throws -> String {
        try await world.verifier.sign(Entitlement(subject: "user-1", asset: "*", expires: world.clock.now.addingTimeInterval(86_400 * 30),
                                                  persistent: persistent))
    }

    func request(_ world: World, certificate: String, signer: P256.Signing.PrivateKey? = nil, asset: String? = nil, keyIDs: [String]? = nil,
                 licenseID: String? = nil, persistent: Bool? = nil, nonce: String = Hex.encode(SecureRandom.bytes(16)), time: Date? = nil) throws -> String {
        try SignedToken.sign(DeviceRequestClaims(certificate: certificate, assetID: asset, keyIDs: keyIDs, licenseID: licenseID,
                                                 persistent: persistent, nonce: nonce, time: time ?? world.clock.now), key: signer ?? world.device)
    }

    @Test("a renewal restarts the rental from the server's time; a released license is not renewed; the record follows")
    func renewal() async throws {
        let world = try await Self.world("device-renew", policy: AssetPolicy(rentalSeconds: 3600, offline: true, renewalSeconds: 1800))
        let token = try await token(world)
        let (_, certificate) = try await world.licensing.register(PublicKeyJWK(world.device.publicKey), token: token, name: nil, externalID: nil)
        let keys = try await world.licensing.keySet()
        let first = try SignedToken.verify(try await world.licensing.acquire(try request(world, certificate: certificate, asset: "movie", persistent: true),
                                                                              token: token, renewalURL: "/licenses/renew"),
                                           as: LicenseClaims.self, key: try keys.keys[0].signingKey())
        #expect(first.rights.validitySeconds == 3600 && first.rights.renewalSeconds == 1800 && first.rights.persistent)
        #expect(first.renewalURL == "/licenses/renew")
        world.clock.advance(1800)
        let renewed = try SignedToken.verify(try await world.licensing.renew(try request(world, certificate: certificate, licenseID: first.licenseID),
                                                                              token: token, renewalURL: nil),
                                             as: LicenseClaims.self, key: try keys.keys[0].signingKey())
        #expect(renewed.licenseID == first.licenseID && renewed.serverTime == first.serverTime.addingTimeInterval(1800))
        #expect(renewed.rights.effectiveEnd(RightsUsage(acquired: renewed.serverTime)) == world.clock.now.addingTimeInterval(3600))
        #expect(try await world.licensing.registry.license(first.licenseID).state == .renewed)
        _ = try await world.licensing.release(try request(world, certificate: certificate, licenseID: first.licenseID))
        await #expect(throws: LicensingError.policyDenied("the license was released")) {
            try await world.licensing.renew(try request(world, certificate: certificate, licenseID: first.licenseID), token: token, renewalURL: nil)
        }
        await world.database.shutdown()
    }

    @Test("a rental is renewable only when the policy says so, and never after it has ended: a renewal six minutes after a 60 s rental ended is refused and the record keeps its rights")
    func rentalRenewal() async throws {
        let world = try await Self.world("device-rental", policy: AssetPolicy(rentalSeconds: 60, offline: true))
        let token = try await token(world)
        let (_, certificate) = try await world.licensing.register(PublicKeyJWK(world.device.publicKey), token: token, name: nil, externalID: nil)
        let rental = try SignedToken.unverifiedClaims(try await world.licensing.acquire(try request(world, certificate: certificate, asset: "movie"),
                                                                                       token: token, renewalURL: "/licenses/renew"), as: LicenseClaims.self)
        #expect(rental.rights.renewalSeconds == nil && rental.renewalURL == nil, "a rental alone carries no renewal")
        world.clock.advance(30)
        await #expect(throws: LicensingError.policyDenied("the license of movie is not renewable")) {
            try await world.licensing.renew(try request(world, certificate: certificate, licenseID: rental.licenseID), token: token, renewalURL: nil)
        }

        // Renewable by policy: renewed while valid; once its validity has run out, never again.
        try await world.licensing.service.store.importKeys([ContentKey.random()], assetID: "series", fairPlayAssetID: nil,
                                                           policy: AssetPolicy(rentalSeconds: 60, offline: true, renewalSeconds: 30))
        let renewable = try SignedToken.unverifiedClaims(try await world.licensing.acquire(try request(world, certificate: certificate, asset: "series"),
                                                                                          token: token, renewalURL: nil), as: LicenseClaims.self)
        world.clock.advance(40)
        _ = try await world.licensing.renew(try request(world, certificate: certificate, licenseID: renewable.licenseID), token: token, renewalURL: nil)
        world.clock.advance(60 + 360)
        let ended = world.clock.now.addingTimeInterval(-360)
        await #expect(throws: LicensingError.policyDenied("the license of series ended at \(ISODate.string(ended)); acquire a new one")) {
            try await world.licensing.renew(try request(world, certificate: certificate, licenseID: renewable.licenseID), token: token, renewalURL: nil)
        }
        let record = try await world.licensing.registry.license(renewable.licenseID)
        #expect(record.state == .renewed && record.renewedAt == ended.addingTimeInterval(-60))
        await world.database.shutdown()
    }

    @Test("by key ID; the keys open only with the device key; a request signed by another key or with another certificate is refused")
    func requests() async throws {
        let world = try await Self.world("device-requests", policy: AssetPolicy(offline: true))
        let token = try await token(world)
        let (device, certificate) = try await world.licensing.register(PublicKeyJWK(world.device.publicKey), token: token, name: "tv", externalID: "x-1")
        #expect(device.name == "tv" && device.externalID == "x-1")
        let answer = try await world.licensing.acquire(try request(world, certificate: certificate, keyIDs: [world.key.keyID.hex]), token: token, renewalURL: nil)
        let claims = try SignedToken.unverifiedClaims(answer, as: LicenseClaims.self)
        #expect(claims.assetID == "movie" && claims.renewalURL == nil && !claims.rights.persistent)
        let agreement = try P256.KeyAgreement.PrivateKey(rawRepresentation: world.device.rawRepresentation)
        #expect(try claims.keys[0].open(with: agreement, licenseID: claims.licenseID, deviceID: device.deviceID) == world.key.key)
        let stranger = P256.Signing.PrivateKey()
        await #expect(throws: LicensingError.self) {
            try await world.licensing.acquire(try request(world, certificate: certificate, signer: stranger, asset: "movie"), token: token, renewalURL: nil)
        }
        let forged = try SignedToken.sign(DeviceCertificateClaims(deviceID: device.deviceID, user: "user-1", key: PublicKeyJWK(stranger.publicKey),
                                                                  issued: world.clock.now), key: stranger)
        await #expect(throws: LicensingError.self) {
            try await world.licensing.acquire(try request(world, certificate: forged, signer: stranger, asset: "movie"), token: token, renewalURL: nil)
        }
        await world.database.shutdown()
    }

    @Test("the signed time carries the server's clock and the nonce; an over-long nonce is refused")
    func signedTime() async throws {
        let world = try await Self.world("device-time", policy: AssetPolicy())
        let token = try await world.licensing.signedTime(nonce: "abc")
        let claims = try SignedToken.verify(token, as: SignedTimeClaims.self, key: try await world.licensing.keySet().key(for: token))
        #expect(claims.time == world.clock.now && claims.nonce == "abc")
        await #expect(throws: LicensingError.self) { try await world.licensing.signedTime(nonce: String(repeating: "n", count: 200)) }
        await world.database.shutdown()
    }

    @Test("a request is answered once: sent again it is refused as replayed, also a release; a request dated more than the allowed skew ahead or behind is refused, so one made for later or kept past its nonce is never answered; a short nonce is refused")
    func replay() async throws {
        let world = try await Self.world("device-replay", policy: AssetPolicy(offline: true))
        let token = try await token(world)
        let (_, certificate) = try await world.licensing.register(PublicKeyJWK(world.device.publicKey), token: token, name: nil, externalID: nil)
        let acquisition = try request(world, certificate: certificate, asset: "movie")
        let claims = try SignedToken.unverifiedClaims(try await world.licensing.acquire(acquisition, token: token, renewalURL: nil), as: LicenseClaims.self)
        await #expect(throws: LicensingError.replayed("this request was already answered (its nonce was used before)")) {
            try await world.licensing.acquire(acquisition, token: token, renewalURL: nil)
        }
        let release = try request(world, certificate: certificate, licenseID: claims.licenseID)
        _ = try await world.licensing.release(release)
        await #expect(throws: LicensingError.self) { try await world.licensing.release(release) }
        // A request dated within the allowed skew either way is taken; further ahead or behind it is refused.
        for offset in [-DeviceLicensing.allowedSkew + 1, DeviceLicensing.allowedSkew - 1] {
            _ = try await world.licensing.acquire(try request(world, certificate: certificate, asset: "movie", time: world.clock.now.addingTimeInterval(offset)),
                                                  token: token, renewalURL: nil)
        }
        let stale = try request(world, certificate: certificate, asset: "movie", time: world.clock.now.addingTimeInterval(-DeviceLicensing.allowedSkew - 60))
        await #expect(throws: LicensingError.clockSkew("it is dated 360 s behind the server's time (at most 300 s either way)")) {
            try await world.licensing.acquire(stale, token: token, renewalURL: nil)
        }
        // A request made for later use (dated 30 days ahead) is refused now, and when its day comes its nonce may be
        // forgotten, but it is refused again if sent after its window (8 days later: the attack that found this).
        let future = try request(world, certificate: certificate, asset: "movie", time: world.clock.now.addingTimeInterval(30 * 86_400))
        await #expect(throws: LicensingError.self) { try await world.licensing.acquire(future, token: token, renewalURL: nil) }
        let ahead = try request(world, certificate: certificate, asset: "movie", time: world.clock.now.addingTimeInterval(DeviceLicensing.allowedSkew - 10))
        _ = try await world.licensing.acquire(ahead, token: token, renewalURL: nil)
        world.clock.advance(2 * DeviceLicensing.allowedSkew - 20)  // the request's window is still open: its nonce is still known
        await #expect(throws: LicensingError.replayed("this request was already answered (its nonce was used before)")) {
            try await world.licensing.acquire(ahead, token: token, renewalURL: nil)
        }
        world.clock.advance(8 * 86_400)  // its nonce forgotten, its window long closed
        await #expect(throws: LicensingError.self) { try await world.licensing.acquire(ahead, token: token, renewalURL: nil) }
        await #expect(throws: LicensingError.self) { try await world.licensing.acquire(future, token: token, renewalURL: nil) }
        await #expect(throws: LicensingError.badRequest("the nonce is 16 to 128 bytes")) {
            try await world.licensing.acquire(try request(world, certificate: certificate, asset: "movie", nonce: "short"), token: token, renewalURL: nil)
        }
        // Nonces are forgotten after the retention: the table does not grow without bound.
        world.clock.advance(DeviceLicensing.nonceRetention + 1)
        let fresh = try request(world, certificate: certificate, asset: "movie")
        _ = try await world.licensing.acquire(fresh, token: token, renewalURL: nil)
        #expect(try await DeviceNonceModel.query(on: world.database.database).count() == 1)
        await world.database.shutdown()
    }
}
