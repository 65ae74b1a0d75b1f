import Foundation
import HTTPTypes
import HummingbirdTesting
import SatchelBackplane
import SatchelBytes
import SatchelFairPlay
import SatchelLicensing
import SatchelProtection
import SatchelServer
import SatchelSystem
import SatchelTestSupport
import Testing

/// FairPlay rentals, leases and offline keys as the key server keeps them (seed 004 "Secure Lease", "Simultaneous
/// Renting and Leasing", "Offline Rental Support"): real SPCs from the device simulator (its HU chosen), a real
/// SQLite database, the backplane's stream slots, a clock the test moves.
@Suite("FairPlay leases, rentals and offline keys")
struct FairPlayLeaseTests {
    struct Setup {
        let world: LicenseServerTests.World
        let service: LicenseService
        let clock: ManualClock
        let backplane: FluentBackplaneStore
        let slots: FluentStreamSlots
        let records: FluentFairPlayRecords
    }

    /// The world's key under `policy`, a service on a manual clock with the records and the lease slots.
    static func setup(_ policy: AssetPolicy) async throws -> Setup {
        let world = try await LicenseServerTests.world("sqlite", policy: policy, packaged: false)
        for migration in BackplaneMigrations.all { try await migration.prepare(on: world.database.database).get() }
        let clock = ManualClock(Date())
        var service = LicenseService(store: world.store, ksm: world.service.ksm, verifier: world.signer, clock: clock)
        let slots = FluentStreamSlots(database: world.database.database), records = FluentFairPlayRecords(database: world.database.database)
        service.fairPlayRecords = records
        service.leaseSlots = BackplaneService.leaseSlots(slots)
        return Setup(world: world, service: service, clock: clock, backplane: FluentBackplaneStore(database: world.database.database), slots: slots,
                     records: records)
    }

    // Random (a run of one digit would match the run of a test content key in the log scan).
    static let phone = SecureRandom.bytes(20), tablet = SecureRandom.bytes(20)

    /// An SPC for the world's asset from the device `hu`, in playback state `state`.
    static func spc(_ setup: Setup, hu: [UInt8], state: PlaybackState = .readyToStart, sync: SyncInfo? = nil,
                    streamingIndicator: UInt64? = nil) throws -> (spc: [UInt8], session: DeviceSimulator.Session) {
        var options = DeviceSimulator.Options(assetID: Array(setup.world.assetID.utf8), playbackState: .init(creationDate: 1, state: state, sessionID: 7),
                                              capabilities: Capabilities(hdcpEnforcement: true, offlineKey: true), streamingIndicator: streamingIndicator, sync: sync)
        options.hu = hu
        return try LicenseServerTests.simulator().makeSPC(options)
    }

    @Test("a combined rental and lease plays on the device that leased it: another device is refused rental-bound-to-device while the rental lasts (the first renews freely), and takes it once the rental ended; an AV adapter's ID binds nothing")
    func rentalBound() async throws {
        let setup = try await Self.setup(AssetPolicy(leaseSeconds: 60, rentalSeconds: 3_600, allowAirPlay: true, offline: true))
        defer { Task { await setup.world.database.shutdown() } }
        let token = try await setup.world.token(asset: setup.world.assetID, expires: 86_400)
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone).spc, token: token)
        await #expect(throws: LicensingError.rentalBound) { try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.tablet).spc, token: token) }
        setup.clock.advance(1_800)
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone, state: .leaseExpiring).spc, token: token)
        await #expect(throws: LicensingError.rentalBound) { try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.tablet).spc, token: token) }
        // An AV adapter's SPC carries the adapter's ID: not a device to bind (seed 004 Table 2-1).
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.tablet, streamingIndicator: StreamingTarget.avAdapterValue).spc, token: token)
        setup.clock.advance(1_801)  // the rental ended: the tablet rents it now, and the phone is the other device
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.tablet).spc, token: token)
        await #expect(throws: LicensingError.rentalBound) { try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone).spc, token: token) }
        // Another account's rental of the same asset is its own.
        let other = try await setup.world.token(asset: setup.world.assetID, subject: "user-2", expires: 86_400)
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone).spc, token: other)
    }

    @Test("a lease takes a stream slot for its device: renewals keep it, another device over the account's limit of one is refused stream-limit, and takes the slot once the lease ended unrenewed; the operator sees the FairPlay device's slot")
    func leaseSlots() async throws {
        let setup = try await Self.setup(AssetPolicy(leaseSeconds: 60))
        defer { Task { await setup.world.database.shutdown() } }
        try await setup.backplane.setLimits(BackplaneLimits(maxStreams: 1), user: "user-1")
        let token = try await setup.world.token(asset: setup.world.assetID, expires: 86_400)
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone).spc, token: token)
        let held = try await setup.slots.slots(user: "user-1", at: setup.clock.now, page: ListingRequest(limit: 10)).items
        #expect(held.map(\.deviceID) == ["fairplay:" + Hex.encode(Self.phone)] && held.first?.assetID == setup.world.assetID)
        await #expect(throws: LicensingError.streamLimit) { try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.tablet).spc, token: token) }
        for _ in 0..<3 {  // renewed every 50 s: held past its first minute
            setup.clock.advance(50)
            _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone, state: .leaseExpiring).spc, token: token)
        }
        await #expect(throws: LicensingError.streamLimit) { try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.tablet).spc, token: token) }
        #expect(try await setup.slots.slots(user: "user-1", at: setup.clock.now, page: ListingRequest(limit: 10)).items.count == 1)
        setup.clock.advance(61)  // the phone stopped renewing
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.tablet).spc, token: token)
        #expect(try await setup.slots.slots(user: "user-1", at: setup.clock.now, page: ListingRequest(limit: 10)).items.map(\.deviceID) == ["fairplay:" + Hex.encode(Self.tablet)])
    }

    @Test("dual expiry: each download's CKC carries a content ID of its own, which the answer names; a Sync SPC names one download alone and a zero duration releases it; another account's Sync SPC changes nothing")
    func offlineKeys() async throws {
        let policy = AssetPolicy(offlineContentID: String(repeating: "ab", count: 16), storageSeconds: 2_592_000, playbackSeconds: 86_400, offline: true)
        let setup = try await Self.setup(policy)
        defer { Task { await setup.world.database.shutdown() } }
        let token = try await setup.world.token(asset: setup.world.assetID, expires: 86_400, persistent: true)
        var contentIDs: [String] = []
        for hu in [Self.phone, Self.tablet] {
            let (spc, session) = try Self.spc(setup, hu: hu)
            let license = try await setup.service.fairPlay(spc: spc, token: token)
            let ckc = try DeviceSimulator.openCKC(license.ckc, session: session)
            let id = try #require(license.offlineContentID)
            #expect(Hex.encode(try #require(ckc.offlineKey).contentID) == id, "the answer names the CKC's content ID")
            #expect(ckc.offlineKey?.playbackSeconds == 86_400)
            contentIDs.append(id)
        }
        #expect(contentIDs[0] != contentIDs[1] && !contentIDs.contains(String(repeating: "ab", count: 16)), "one content ID per download")
        let recorded = try await setup.records.offlineKeys(subject: "user-1", limit: 10)
        #expect(Set(recorded.map(\.contentID)) == Set(contentIDs) && recorded.allSatisfy { $0.state == .active })
        #expect(Set(recorded.map(\.device)) == [Hex.encode(Self.phone), Hex.encode(Self.tablet)])

        // The phone's download: a Sync SPC with time left, then one saying its key is gone.
        let phoneID = try Hex.decode(contentIDs[0], count: 16)
        setup.clock.advance(10)
        let sync = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone, sync: SyncInfo(contentID: phoneID, durationToExpiry: 5_000)).spc,
                                                    token: token)
        #expect(sync.wasSync)
        var byID = Dictionary(uniqueKeysWithValues: try await setup.records.offlineKeys(subject: nil, limit: 10).map { ($0.contentID, $0) })
        #expect(byID[contentIDs[0]]?.durationToExpiry == 5_000)
        #expect(abs(try #require(byID[contentIDs[0]]?.lastSync).timeIntervalSince(setup.clock.now)) < 1)
        let other = try await setup.world.token(asset: setup.world.assetID, subject: "user-2", expires: 86_400, persistent: true)
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone, sync: SyncInfo(contentID: phoneID, durationToExpiry: 0)).spc, token: other)
        byID = Dictionary(uniqueKeysWithValues: try await setup.records.offlineKeys(subject: nil, limit: 10).map { ($0.contentID, $0) })
        #expect(byID[contentIDs[0]]?.state == .active, "another account's Sync SPC names no download of this one")
        _ = try await setup.service.fairPlay(spc: try Self.spc(setup, hu: Self.phone, sync: SyncInfo(contentID: phoneID, durationToExpiry: 0)).spc, token: token)
        byID = Dictionary(uniqueKeysWithValues: try await setup.records.offlineKeys(subject: nil, limit: 10).map { ($0.contentID, $0) })
        #expect(byID[contentIDs[0]]?.state == .released && byID[contentIDs[1]]?.state == .active, "one download released, the other kept")
        #expect(byID.count == 2, "a Sync SPC is no new download")
        #expect(sync.offlineContentID == contentIDs[0], "a Sync SPC's answer keeps the content ID it names")
    }

    @Test("POST /fps/license says when the CKC uses dual expiry: the Satchel-Offline-Content-ID header (raw SPC) and dualExpiry with the content ID (JSON); a streaming key says nothing")
    func dualExpiryAnswer() async throws {
        let policy = AssetPolicy(offlineContentID: String(repeating: "cd", count: 16), storageSeconds: 600, playbackSeconds: 60, offline: true)
        let setup = try await Self.setup(policy)
        defer { Task { await setup.world.database.shutdown() } }
        let persistent = try await setup.world.token(asset: setup.world.assetID, persistent: true)
        let streaming = try await setup.world.token(asset: setup.world.assetID)
        let header = HTTPField.Name("Satchel-Offline-Content-ID")!
        try await LicenseServer.application(service: setup.service, certificate: setup.world.certificate, port: 0).test(.live) { client in
            let raw = try await client.execute(uri: "/fps/license", method: .post, headers: LicenseServerTests.bearer(persistent),
                                               body: .init(bytes: try Self.spc(setup, hu: Self.phone).spc))
            #expect(raw.status == .ok && raw.headers[header]?.count == 32)
            let body = try JSONSerialization.data(withJSONObject: ["spc": Data(try Self.spc(setup, hu: Self.phone).spc).base64EncodedString(), "token": persistent])
            let json = try await client.execute(uri: "/fps/license", method: .post, headers: [.contentType: "application/json"], body: .init(bytes: Array(body)))
            let answer = try #require(try JSONSerialization.jsonObject(with: Data(buffer: json.body)) as? [String: Any])
            #expect(answer["dualExpiry"] as? Bool == true && (answer["offlineContentID"] as? String)?.count == 32 && answer["offlineContentID"] as? String != raw.headers[header])
            let plain = try await client.execute(uri: "/fps/license", method: .post, headers: LicenseServerTests.bearer(streaming),
                                                 body: .init(bytes: try Self.spc(setup, hu: Self.phone).spc))
            #expect(plain.status == .ok && plain.headers[header] == nil, "a streaming token gets no offline key")
        }
    }
}
