import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelLicensing
import SatchelProtection
import SatchelSystem
import Testing

/// The seams the license service is built on: any key store, one clock.
@Suite("Seams: the in-memory key store and the clock")
struct SeamTests {
    static func key(_ byte: UInt8) throws -> ContentKey {
        try ContentKey(keyID: KeyID([UInt8](repeating: byte, count: 16)), key: SecretBytes([UInt8](repeating: byte &+ 1, count: 16)),
                       iv: [UInt8](repeating: 0, count: 16))
    }

    @Test("the license service runs over the in-memory store: lookups by key, asset and FairPlay ID, the audit, deletion")
    func inMemoryStore() async throws {
        let store = InMemoryKeyStore()
        let first = try Self.key(1), second = try Self.key(2)
        try await store.importKeys([first], assetID: "movie", fairPlayAssetID: "movie-fps", policy: AssetPolicy(leaseSeconds: 60))
        try await store.importKeys([second], assetID: "trailer", fairPlayAssetID: nil, policy: AssetPolicy())
        #expect(try await store.key(asset: "movie-fps").assetID == "movie")
        #expect(try await store.key(id: second.keyID).assetID == "trailer")
        #expect(try await store.allSummaries().map(\.assetID) == ["movie", "trailer"])
        await #expect(throws: LicensingError.unknownAsset("nothing")) { try await store.key(asset: "nothing") }
        await #expect(throws: LicensingError.badRequest("no keys to import")) {
            try await store.importKeys([], assetID: "x", fairPlayAssetID: nil, policy: AssetPolicy())
        }

        let clock = ManualClock(Date(timeIntervalSince1970: 1_900_000_000))
        let service = LicenseService(store: store, ksm: nil, verifier: nil, clock: clock)
        let license = try await service.clearKey(ClearKey.Request(keyIDs: [first.keyID]), token: nil)
        #expect(try ClearKey.parseResponse(license).first?.key.bytes == first.key.bytes)
        let audit = try await store.licenses()
        #expect(audit.count == 1 && audit.first?.type == "clearkey-temporary" && audit.first?.issuedAt == clock.now)

        #expect(await store.delete(first.keyID.hex))
        await #expect(throws: LicensingError.unknownAsset(first.keyID.hex)) { try await store.key(id: first.keyID) }
        #expect(await store.delete("trailer"))
        #expect(await store.delete("trailer") == false)
    }

    @Test("policy windows are judged by the service's clock, not the machine's")
    func clockDecides() async throws {
        let store = InMemoryKeyStore()
        let key = try Self.key(3)
        let opens = Date(timeIntervalSince1970: 2_000_000_000)
        try await store.importKeys([key], assetID: "premiere", fairPlayAssetID: nil, policy: AssetPolicy(notBefore: opens))
        let clock = ManualClock(opens.addingTimeInterval(-1))
        let service = LicenseService(store: store, ksm: nil, verifier: nil, clock: clock)
        await #expect(throws: LicensingError.self) { try await service.aes128Key(key.keyID, token: nil) }
        clock.advance(2)
        #expect(try await service.aes128Key(key.keyID, token: nil) == key.key.bytes)
    }

    @Test("token expiry is judged by the service's clock: a token still fresh by the machine's clock expires by the service's")
    func tokenExpiryByClock() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let clock = ManualClock(Date())
        let service = LicenseService(store: world.store, ksm: nil, verifier: world.signer, clock: clock)
        let token = try await world.token(asset: world.assetID, expires: 600)
        let request = ClearKey.Request(keyIDs: [world.key.keyID])
        _ = try await service.clearKey(request, token: token)
        clock.advance(601)
        await #expect(throws: LicensingError.invalidEntitlement("the token has expired")) { try await service.clearKey(request, token: token) }
    }

    @Test("a Clear Key license's expiry is the earliest of the token's exp, the asset's not-after and its lease (policy or token) from now")
    func clearKeyExpiry() async throws {
        let world = try await LicenseServerTests.world("sqlite", policy: AssetPolicy(leaseSeconds: 300), packaged: false)
        defer { Task { await world.database.shutdown() } }
        // The tokens' exp counts from the machine's clock when they are signed: sign first, then fix the service's clock.
        let long = try await world.token(asset: world.assetID, expires: 600), brief = try await world.token(asset: world.assetID, expires: 100)
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let clock = ManualClock(now)
        let service = LicenseService(store: world.store, ksm: nil, verifier: world.signer, clock: clock)
        let request = ClearKey.Request(keyIDs: [world.key.keyID])
        let leased = try await service.clearKeyLicense(request, token: long)
        #expect(leased.expires == now.addingTimeInterval(300), "the lease (300 s) ends before the token (600 s)")
        #expect(try ClearKey.parseResponse(leased.body).first?.key.bytes == world.key.key.bytes)
        let short = try await service.clearKeyLicense(request, token: brief)
        #expect(abs(short.expires.timeIntervalSince(now.addingTimeInterval(100))) < 2, "the token ends first: \(short.expires)")

        let store = InMemoryKeyStore()
        let key = try Self.key(4)
        let ends = now.addingTimeInterval(50)
        try await store.importKeys([key], assetID: "ending", fairPlayAssetID: nil, policy: AssetPolicy(notAfter: ends, leaseSeconds: 300))
        let open = LicenseService(store: store, ksm: nil, verifier: nil, clock: clock)
        #expect(try await open.clearKeyLicense(ClearKey.Request(keyIDs: [key.keyID]), token: nil).expires == ends, "the asset's not-after ends first")
    }

    @Test("the license server runs every step of the KSM: a certificate revoked in the KSM's configuration is refused over it")
    func serviceRunsTheKSM() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let simulator = try LicenseServerTests.simulator()
        let (spc, _) = try simulator.makeSPC(.init(assetID: Array(world.assetID.utf8)))
        let hash = Hex.encode(try SPCParser.readHeader(spc).0.certificateHash)
        let ksm = try #require(world.service.ksm)
        var configuration = ksm.configuration
        configuration.revokedCertificates = [hash]
        let service = LicenseService(store: world.store, ksm: KeySecurityModule(configuration: configuration), verifier: world.signer)
        let token = try await world.token(asset: world.assetID)
        await #expect(throws: FairPlayError.certificateRevoked(hashHex: hash)) { try await service.fairPlay(spc: spc, token: token) }
        #expect(try await world.service.fairPlay(spc: spc, token: token).ckc.count > 0, "the same SPC is answered without the revocation")
    }

    @Test("the crash-safe writer replaces whole files, leaves no temporary file, keeps the mode, and can refuse to replace")
    func atomicFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("key.bin").path
        try AtomicFile.write(Array("first".utf8), to: path, mode: 0o600)
        try AtomicFile.write(Array("second".utf8), to: path, mode: 0o600)
        #expect(FileManager.default.contents(atPath: path) == Data("second".utf8))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(throws: SystemError.self) { try AtomicFile.write(Array("third".utf8), to: path, replace: false) }
        #expect(FileManager.default.contents(atPath: path) == Data("second".utf8), "an existing file is never replaced without replace")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["key.bin"], "no temporary file is left")
        let missing = directory.appendingPathComponent("no/such/dir/file").path
        let error = #expect(throws: SystemError.self) { try AtomicFile.write([1], to: missing) }
        #expect(error?.path == directory.appendingPathComponent("no/such/dir").path && error?.code == "file-system")
    }
}
