import Crypto
import Foundation
import Logging
@testable import SatchelAgent
import SatchelBackplane
import SatchelBytes
import SatchelRights
import Testing

/// The agent's roles, each made and driven alone — no `Agent` — over a real data directory and store (issue 50
/// step 6: each role holds its own state and is testable alone).
@Suite("Agent roles, each alone")
struct AgentRolesTests {
    /// A role's world: the device, a store, a clock the test sets, and where events go.
    struct World {
        let directory: String
        let device: AgentDevice
        let store: LicenseStore
        let reader: SteppedClockReader
        let transport: AgentTransport
        let reporter: AgentReporter
        let events: AsyncStream<AgentEvent>

        static func make(_ label: String) async throws -> World {
            let directory = try DeviceStoreTests.directory("roles-\(label)")
            let identity = try DeviceIdentity.load(dataDirectory: directory, vault: FileKeyVault(dataDirectory: directory))
            let store = try await LicenseStore(dataDirectory: directory, deviceKey: identity.key,
                                               anchor: FileStoreAnchor(dataDirectory: directory, seal: StateSeal(deviceKey: identity.key, purpose: "store-anchor")),
                                               logger: Logger(label: "test"))
            let (events, continuation) = AsyncStream.makeStream(of: AgentEvent.self)
            return World(directory: directory, device: AgentDevice(identity: identity, dataDirectory: directory), store: store,
                         reader: SteppedClockReader(wall: Date(timeIntervalSince1970: 1_900_000_000)),
                         transport: try AgentTransport.open(dataDirectory: directory, adding: []),
                         reporter: AgentReporter(continuation: continuation, logger: Logger(label: "test")), events: events)
        }

        /// A registration with a server that answers nothing (a closed port on loopback).
        func register(server: String = "http://127.0.0.1:9") throws {
            let serverKey = P256.Signing.PrivateKey()
            try device.adopt(DeviceIdentity.Registration(deviceID: "device-1", certificate: "certificate", server: server,
                                                         serverKeys: PublicKeySet(keys: [PublicKeyJWK(serverKey.publicKey, kid: "k1")]),
                                                         name: nil, externalID: nil), trusted: true)
        }

        var serverKeys: AgentServerKeys { AgentServerKeys(device: device, transport: transport, logger: Logger(label: "test")) }

        func clock() -> AgentClock {
            AgentClock(store: store, reader: reader, device: device, transport: transport, serverKeys: serverKeys, reporter: reporter)
        }
    }

    @Test("the device alone: unregistered it refuses; a registration it adopts is sealed on disk (a fresh load reads it back); forgotten, it is gone; it signs with the device key; a text that is no license has no claims")
    func device() async throws {
        let world = try await World.make("device")
        #expect(throws: AgentError.notRegistered) { try world.device.registered() }
        try world.register()
        #expect(try world.device.registered().deviceID == "device-1")
        let reloaded = try DeviceIdentity.load(dataDirectory: world.directory, vault: FileKeyVault(dataDirectory: world.directory))
        #expect(reloaded.registration?.deviceID == "device-1" && reloaded.tampered == nil, "saved sealed")
        let signed = try world.device.sign(DeviceRequestClaims(certificate: "certificate", nonce: "n", time: Date()))
        #expect((try? SignedToken.verify(signed, as: DeviceRequestClaims.self, key: world.device.key.publicKey)) != nil)
        #expect(world.device.claims(of: "not.a.license") == nil)
        try world.device.forget()
        #expect(world.device.registration == nil)
        #expect(try DeviceIdentity.load(dataDirectory: world.directory, vault: FileKeyVault(dataDirectory: world.directory)).registration == nil)
        await world.store.close()
    }

    @Test("the clock alone: with the server out of reach, trust is asked for once, then not again until the back-off (15 s, doubling) has passed by the boot clock; an unregistered device asks nothing")
    func clockBackOff() async throws {
        let world = try await World.make("clock")
        let clock = world.clock()
        #expect(await !clock.restoreTrust() && clock.trustRetry == nil, "not registered: nothing asked")
        try world.register()
        #expect(await !clock.restoreTrust())
        let first = try #require(clock.trustRetry)
        #expect(first.backOff == 15 && first.after == world.reader.read().boot + 15)
        world.reader.advance(5)
        #expect(await !clock.restoreTrust())
        #expect(clock.trustRetry?.backOff == 15 && clock.trustRetry?.after == first.after, "within the back-off: not asked again")
        world.reader.advance(11)
        #expect(await !clock.restoreTrust())
        #expect(clock.trustRetry?.backOff == 30, "asked again after it, and failed: the back-off doubles")
        await world.store.close()
    }

    @Test("the clock alone: a wall clock set back is reported once as untrusted time, and the store keeps the untrusted clock")
    func clockRollback() async throws {
        let world = try await World.make("rollback")
        let clock = world.clock()
        var seen = world.events.makeAsyncIterator()
        _ = try await clock.observe(world.reader.read(), in: try await world.store.snapshot())
        world.reader.advance(5, wall: Date(timeIntervalSince1970: 1_900_000_000 - 3600))
        let after = try await clock.observe(world.reader.read(), in: try await world.store.snapshot())
        #expect(!after.trusted)
        #expect(await seen.next() == .untrustedTime)
        let again = try await clock.observe(world.reader.read(), in: try await world.store.snapshot())
        let kept = try await world.store.snapshot().state.clock
        #expect(!again.trusted && !kept.trusted)
        world.reporter.continuation.finish()
        #expect(await seen.next() == nil, "reported once")
        await world.store.close()
    }

    @Test("the activity log alone: events are kept in the outbox it opens once, until sent")
    func activity() async throws {
        let world = try await World.make("activity")
        let activity = AgentActivity(dataDirectory: world.directory, store: world.store, reader: world.reader, reporter: world.reporter)
        #expect(try await activity.record(.playStart, asset: "movie"))
        #expect(try await activity.record(.licenseAcquired, asset: "movie", reason: "persistent"))
        let outbox = try await activity.opened()
        #expect(try await activity.opened() === outbox, "opened once")
        #expect(Set(try await outbox.pending(limit: 10).map(\.kind)) == [.playStart, .licenseAcquired])
        await activity.close()
        await world.store.close()
    }
}
