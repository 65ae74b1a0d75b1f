import Foundation
import SatchelBytes
import Testing
@testable import SatchelFairPlay

/// Every FPS client error code of the guide (Tables 3-1 and 6-2) has the condition that raises it.
@Suite("FairPlay: every client error code of the guide")
struct AppleErrorCodeTests {
    @Test("SPC creation: no certificate, no asset ID, an invalid one, no version list, a revoked certificate")
    func creation() throws {
        let fixture = try Fixture()
        #expect(throws: FairPlayError.missingCertificate) { try DeviceSimulator(certificate: [], dFunction: fixture.credential.dFunction) }
        #expect(throws: FairPlayError.missingAssetID) { try fixture.simulator.makeSPC(.init(assetID: [])) }
        #expect(throws: FairPlayError.invalidAssetIDLength(1)) { try fixture.simulator.makeSPC(.init(assetID: [1])) }
        #expect(throws: FairPlayError.missingVersionList) { try fixture.simulator.makeSPC(.init(assetID: [1, 2], supportedVersions: [])) }
        let (spc, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2]))
        let hash = Hex.encode(try SPCParser.readHeader(spc).0.certificateHash)
        #expect(throws: FairPlayError.certificateRevoked(hashHex: hash)) { try fixture.ksm { $0.revokedCertificates = [hash] }.parse(spc) }
        #expect(throws: Never.self) { try fixture.ksm { $0.revokedCertificates = ["00"] }.parse(spc) }
    }

    @Test("keys in use: a lease, a rental, a limited persisted key, an offline key's two windows, an unsupported offline format")
    func keyLifetimes() async throws {
        let fixture = try Fixture()
        let received = Date(timeIntervalSince1970: 1_900_000_000)
        func ckc(_ configure: (inout ContentKeyPolicy) -> Void, capabilities: Capabilities? = nil) async throws -> CKC {
            let (spc, session) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], playbackState: .init(creationDate: 1, state: .readyToStart, sessionID: 1),
                                                                     capabilities: capabilities))
            let policy = try Fixture.policy(configure)
            return try DeviceSimulator.openCKC(try await fixture.ksm().process(spc) { _ in policy }.ckc, session: session)
        }
        let lease = try await ckc { $0.duration = .lease(60) }
        try DeviceSimulator.checkKey(lease, receivedAt: received, firstPlaybackAt: nil, now: received.addingTimeInterval(60))
        #expect(throws: FairPlayError.leaseExpired) { try DeviceSimulator.checkKey(lease, receivedAt: received, firstPlaybackAt: nil, now: received.addingTimeInterval(61)) }
        let persisted = try await ckc { $0.duration = .persistable(seconds: 3600) }
        #expect(throws: FairPlayError.persistentKeyExpired) {
            try DeviceSimulator.checkKey(persisted, receivedAt: received, firstPlaybackAt: nil, now: received.addingTimeInterval(3601))
        }
        let unlimited = try await ckc { $0.duration = .persistable() }
        try DeviceSimulator.checkKey(unlimited, receivedAt: received, firstPlaybackAt: nil, now: received.addingTimeInterval(1e9))
        let offline = try OfflineKeyPolicy(contentID: Array(repeating: 7, count: 16), storageSeconds: 100, playbackSeconds: 10)
        let dual = try await ckc({ $0.offlineKey = offline }, capabilities: .init(hdcpEnforcement: true, offlineKey: true))
        try DeviceSimulator.checkKey(dual, receivedAt: received, firstPlaybackAt: nil, now: received.addingTimeInterval(99))
        #expect(throws: FairPlayError.persistentKeyExpired, "the storage window passes before the first playback") {
            try DeviceSimulator.checkKey(dual, receivedAt: received, firstPlaybackAt: nil, now: received.addingTimeInterval(101))
        }
        let played = received.addingTimeInterval(90)
        try DeviceSimulator.checkKey(dual, receivedAt: received, firstPlaybackAt: played, now: played.addingTimeInterval(10))
        #expect(throws: FairPlayError.persistentKeyExpired, "the playback window runs from the first playback") {
            try DeviceSimulator.checkKey(dual, receivedAt: received, firstPlaybackAt: played, now: played.addingTimeInterval(11))
        }
        var future = offline
        future.version = 2
        let newer = try await ckc({ $0.offlineKey = future }, capabilities: .init(hdcpEnforcement: true, offlineKey: true))
        #expect(throws: FairPlayError.persistentKeyFormatUnsupported(version: 2)) {
            try DeviceSimulator.checkKey(newer, receivedAt: received, firstPlaybackAt: nil, now: received)
        }
    }

    @Test("the twelve codes of Tables 3-1 and 6-2 each map from a case")
    func everyCode() {
        let cases: [FairPlayError] = [.leaseExpired, .invalidCKC("x"), .missingCertificate, .missingAssetID, .missingVersionList, .invalidAssetIDLength(1),
                                      .spcCreationFailed("x"), .invalidCertificate("x"), .noCommonProtocolVersion(device: [], server: []),
                                      .certificateRevoked(hashHex: "00"), .persistentKeyFormatUnsupported(version: 2), .persistentKeyExpired]
        #expect(cases.compactMap(\.appleErrorCode) == [-42656, -42668, -42672, -42673, -42674, -42675, -42676, -42679, -42681, -42783, -42799, -42800])
    }
}
