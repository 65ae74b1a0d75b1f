import Crypto
import Foundation
import SatchelBackplane
import SatchelBytes
import SatchelLicensing
import SatchelProtection
import SatchelRights

/// The services the scale benchmark calls, over one store, with devices registered through the license service (their
/// certificates sign the license requests) and a license each to renew.
struct ScaleWorld: Sendable {
    let licensing: DeviceLicensing
    /// The key store under `licensing`, whose cache of opened keys a cold operation empties first.
    let keys: FluentKeyStore
    let backplane: FluentBackplaneStore
    let slots: FluentStreamSlots
    let events: FluentEventStore
    let token: String
    let devices: [(key: P256.Signing.PrivateKey, certificate: String)]
    let licenses: [(device: Int, licenseID: String)]
    let keyIDs: [KeyID]
    let sizes: ScaleBenchmark.Sizes

    init(database: LicensingDatabase, store: FluentKeyStore, kek: KeyEncryptionKey, keyIDs: [KeyID], sizes: ScaleBenchmark.Sizes) async throws {
        let verifier = try await EntitlementVerifier(hmacSecret: Array("the scale benchmark's secret, 32 bytes or more".utf8))
        let service = LicenseService(store: store, ksm: nil, verifier: verifier)
        licensing = DeviceLicensing(service: service, registry: DeviceRegistry(database: database.database, kek: kek))
        keys = store
        backplane = FluentBackplaneStore(database: database.database, readers: database.readers, syncTimes: database.database(of: SyncTimesTable.file))
        slots = FluentStreamSlots(database: database.database)
        events = FluentEventStore(database: try database.sql())
        token = try await verifier.sign(Entitlement(subject: "user-0000001", asset: "*", expires: Date().addingTimeInterval(30 * 86_400), persistent: true))
        (self.keyIDs, self.sizes) = (keyIDs, sizes)
        var devices: [(key: P256.Signing.PrivateKey, certificate: String)] = []
        var licenses: [(device: Int, licenseID: String)] = []
        for index in 0..<32 {
            let key = P256.Signing.PrivateKey()
            let (_, certificate) = try await licensing.register(PublicKeyJWK(key.publicKey), token: token, name: nil, externalID: nil)
            devices.append((key, certificate))
            let answer = try await licensing.acquire(Self.request(certificate, key, asset: Self.asset(index, of: sizes)), token: token, renewalURL: nil)
            licenses.append((index, try SignedToken.unverifiedClaims(answer, as: LicenseClaims.self).licenseID))
        }
        (self.devices, self.licenses) = (devices, licenses)
    }

    /// Operations timed on a cold key cache.
    static let cold: Set<String> = ["device license acquire", "Clear Key license", "AES-128 key"]

    static func asset(_ number: Int, of sizes: ScaleBenchmark.Sizes) -> String { String(format: "asset-%07d", abs(number &* 7919) % sizes.assets) }
    static func named(_ prefix: String, _ number: Int, of count: Int) -> String { String(format: "\(prefix)%07d", abs(number &* 104_729) % count + 1) }

    static func request(_ certificate: String, _ key: P256.Signing.PrivateKey, asset: String? = nil, licenseID: String? = nil) throws -> String {
        try SignedToken.sign(DeviceRequestClaims(certificate: certificate, assetID: asset, licenseID: licenseID, persistent: asset == nil ? nil : true,
                                                 nonce: Hex.encode(SecureRandom.bytes(16)), time: Date()), key: key)
    }

    /// Each operation, by name: called with the operation's number. Those named in ``cold`` empty the key store's cache
    /// of opened keys first: each of their lookups goes to the database, not to the cache (the small store's catalogue
    /// would otherwise sit in it after its first 2,000 lookups).
    func operations() -> [(String, @Sendable (Int) async throws -> Void)] {
        operationsOnTheirOwn().map { name, operation in
            guard Self.cold.contains(name) else { return (name, operation) }
            return (name, { [keys] number in
                keys.forgetCachedKeys()
                try await operation(number)
            })
        }
    }

    /// Each operation, by name, as it is.
    private func operationsOnTheirOwn() -> [(String, @Sendable (Int) async throws -> Void)] {
        let world = self
        let middle = (keys: ListingCursor(listing: KeySummary.listing, key: [Self.asset(world.sizes.assets / 2, of: world.sizes), ""]),
                      devices: ListingCursor(listing: BackplaneDevice.listing, key: [Self.named("device-", world.sizes.devices / 2, of: world.sizes.devices)]),
                      users: ListingCursor(listing: backplaneUsersListing, key: [Self.named("user-", world.sizes.users / 2, of: world.sizes.users)]),
                      events: ListingCursor(listing: RecordedEvent.listing, key: [String(world.sizes.events / 2), ""]))
        return [
            ("device register", { number in
                let key = P256.Signing.PrivateKey()
                let (record, _) = try await world.licensing.register(PublicKeyJWK(key.publicKey), token: world.token, name: nil, externalID: nil)
                _ = try await world.backplane.register(BackplaneDevice(deviceID: record.deviceID, user: Self.named("user-", number, of: world.sizes.users),
                                                                       name: "phone", platform: "linux", downloadEnabled: false, registered: Date()))
            }),
            ("device license acquire", { number in
                let device = world.devices[abs(number) % world.devices.count]
                _ = try await world.licensing.acquire(try Self.request(device.certificate, device.key, asset: Self.asset(number, of: world.sizes)),
                                                      token: world.token, renewalURL: nil)
            }),
            ("device license renew", { number in
                let license = world.licenses[abs(number) % world.licenses.count], device = world.devices[license.device]
                _ = try await world.licensing.renew(try Self.request(device.certificate, device.key, licenseID: license.licenseID), token: world.token, renewalURL: nil)
            }),
            ("Clear Key license", { number in
                _ = try await world.licensing.service.clearKey(ClearKey.Request(keyIDs: [world.keyIDs[abs(number &* 7919) % world.keyIDs.count]]), token: world.token)
            }),
            ("AES-128 key", { number in
                _ = try await world.licensing.service.aes128Key(world.keyIDs[abs(number &* 7919 + world.keyIDs.count / 2) % world.keyIDs.count], token: world.token)
            }),
            ("backplane sync", { number in
                _ = try await world.backplane.syncView(device: Self.named("device-", number, of: world.sizes.devices), after: 0, limit: 100, at: Date())
            }),
            ("stream slot acquire + release", { number in
                let device = Self.named("device-", number, of: world.sizes.devices)
                let answer = try await world.slots.acquire(device: device, asset: "asset-0000001", at: Date())
                if let slot = answer.slot { try await world.slots.release(device: device, slot: slot.slotID) }
            }),
            ("event ingest (20 events)", { number in
                let batch = (0..<20).map { DeviceEvent(eventID: "bench-\(number)-\($0)-\(UInt32.random(in: 0...UInt32.max))", kind: .playStart, time: Date(), assetID: "a") }
                _ = try await world.events.record(batch, device: Self.named("device-", number, of: world.sizes.devices), user: "user-0000001", received: Date())
            }),
            ("keys: first page", { _ in _ = try await world.licensing.service.store.summaries(ListingRequest()) }),
            ("keys: a page mid-catalogue", { _ in _ = try await world.licensing.service.store.summaries(ListingRequest(after: middle.keys)) }),
            ("devices: first page", { _ in _ = try await world.backplane.devices(user: nil, page: ListingRequest()) }),
            ("devices: a page mid-listing", { _ in _ = try await world.backplane.devices(user: nil, page: ListingRequest(after: middle.devices)) }),
            ("users: first page", { _ in _ = try await world.backplane.users(ListingRequest()) }),
            ("users: a page mid-listing", { _ in _ = try await world.backplane.users(ListingRequest(after: middle.users)) }),
            ("events: first page", { _ in _ = try await world.events.events(EventQuery(), page: ListingRequest()) }),
            ("events: a page mid-history", { _ in _ = try await world.events.events(EventQuery(), page: ListingRequest(after: middle.events)) }),
        ]
    }
}
