import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelFairPlay

@Suite("Device simulator round trips")
struct SimulatorRoundTripTests {
    static let durations: [ContentKeyDuration?] = [
        nil, .lease(600), .rental(86_400), .leaseAndRental(lease: 300, rental: 7_200),
        .persistable(), .persistable(seconds: 2_592_000),
    ]
    static let hdcpOptions: [HDCPRequirement?] = [nil, HDCPRequirement.none, .type0, .type1]
    static let states: [PlaybackState?] = [nil, .readyToStart, .playingOrPaused, .leaseExpiring]

    @Test("every policy combination survives SPC → KSM → CKC → device", arguments: 0..<durations.count)
    func everyCombination(durationIndex: Int) async throws {
        let fixture = try Fixture()
        var random = SplitMix64(seed: UInt64(durationIndex) &* 7919)
        let duration = Self.durations[durationIndex]
        for hdcp in Self.hdcpOptions {
            for state in Self.states {
                for withhold in [false, true] {
                    for offline in duration == nil ? [false, true] : [false] {
                        try await roundTrip(fixture: fixture, random: &random, duration: duration, hdcp: hdcp,
                                      state: state, withhold: withhold, offline: offline)
                    }
                }
            }
        }
    }

    func roundTrip(fixture: Fixture, random: inout SplitMix64, duration: ContentKeyDuration?, hdcp: HDCPRequirement?,
                   state: PlaybackState?, withhold: Bool, offline: Bool) async throws {
        let key = random.bytes(16), iv = random.bytes(16)
        let assetID = random.bytes(Int.random(in: 2...200, using: &random))
        let undefined = (0..<Int.random(in: 0...4, using: &random)).map { index in
            TLLV(tag: TLLVTag(0x1000 + UInt64(index)), value: random.bytes(Int.random(in: 0...40, using: &random)),
                 extraBlocks: Int.random(in: 0...2, using: &random))
        }
        let returnTags = [TLLVTag.assetID] + undefined.map(\.tag).filter { _ in Bool.random(using: &random) }
        let target = [StreamingTarget.device, .airPlay, .avAdapter].randomElement(using: &random) ?? .device
        let options = DeviceSimulator.Options(
            assetID: assetID,
            playbackState: state.map { MediaPlaybackState(creationDate: UInt32(Date().timeIntervalSince1970), state: $0, sessionID: random.next()) },
            capabilities: offline || Bool.random(using: &random) ? Capabilities(hdcpEnforcement: true, offlineKey: true) : nil,
            streamingIndicator: target == .device ? (Bool.random(using: &random) ? random.next() : nil) : target.indicatorValue,
            extraTLLVs: undefined, returnTags: returnTags)
        let (spc, session) = try fixture.simulator.makeSPC(options)
        let offlineKey = offline ? try OfflineKeyPolicy(contentID: random.bytes(16), storageSeconds: 2_592_000, playbackSeconds: 86_400) : nil
        let policy = try ContentKeyPolicy(contentKey: SecretBytes(key), contentIV: iv, duration: duration, hdcp: hdcp,
                                          offlineKey: offlineKey, withholdKeyWhilePlaying: withhold)
        let response = try await fixture.ksm().process(spc) { parsed in
            #expect(parsed.assetID == assetID)
            return policy
        }
        let ckc = try DeviceSimulator.openCKC(response.ckc, session: session)
        let label = "duration \(String(describing: duration)) hdcp \(String(describing: hdcp)) state \(String(describing: state)) withhold \(withhold)"
        if withhold && state == .playingOrPaused {
            #expect(ckc.contentKey.bytes != key, "key withheld in state 2: \(label)")
            #expect(response.summary.keyWithheld)
        } else {
            #expect(ckc.contentKey.bytes == key, "\(label)")
        }
        #expect(ckc.contentIV == iv)
        #expect(ckc.duration == (state == nil ? nil : duration), "\(label)")
        #expect(response.summary.durationOmitted == (duration != nil && state == nil))
        #expect(ckc.hdcp == hdcp)
        #expect(ckc.tllvs[.hdcpEnforcement]?.valueLength == (hdcp == nil ? nil : 16), "the level and 8 reserved bytes, as the reference KSM")
        #expect(ckc.offlineKey == offlineKey)
        for tag in returnTags {
            #expect(ckc.tllvs[tag] == response.spc.tllvs[tag])
        }
    }

    @Test("a production-mode (ASk) round trip works, and a different ASk fails the integrity check")
    func productionMode() async throws {
        let ask = SecretBytes.random(16)
        let simulator = try DeviceSimulator(certificate: try Conformance.certificate(), dFunction: ProductionDFunction(ask: ask))
        let credential = try FairPlayCredential(certificate: try Conformance.certificate(), privateKey: try Conformance.privateKeyPEM(),
                                                dFunction: ProductionDFunction(ask: ask))
        let ksm = KeySecurityModule(configuration: .init(credentials: [credential]))
        let (spc, session) = try simulator.makeSPC(.init(assetID: Array("movie-1".utf8)))
        let response = try await ksm.process(spc) { _ in try Fixture.policy() }
        #expect(try DeviceSimulator.openCKC(response.ckc, session: session).contentKey.bytes == Array(repeating: 0x42, count: 16))

        let other = try FairPlayCredential(certificate: try Conformance.certificate(), privateKey: try Conformance.privateKeyPEM(),
                                           dFunction: ProductionDFunction(ask: SecretBytes.random(16)))
        #expect(throws: FairPlayError.integrityCheckFailed) { try SPCParser(credentials: [other]).parse(spc) }
    }

    @Test("several credentials: the SPC's certificate hash picks the right one")
    func severalCredentials() async throws {
        let fixture = try Fixture()
        let generated = try GeneratedCredential()
        let dask = SecretBytes.random(16)
        let second = try FairPlayCredential(certificate: generated.certificate, privateKey: generated.privateKeyPEM,
                                            dFunction: DevelopmentDFunction(dask: dask))
        let ksm = KeySecurityModule(configuration: .init(credentials: [fixture.credential, second]))
        let simulator = try DeviceSimulator(certificate: generated.certificate, dFunction: DevelopmentDFunction(dask: dask))
        let (spcB, sessionB) = try simulator.makeSPC(.init(assetID: [1, 2, 3]))
        let (spcA, sessionA) = try fixture.simulator.makeSPC(.init(assetID: [4, 5, 6]))
        for (spc, session) in [(spcA, sessionA), (spcB, sessionB)] {
            let response = try await ksm.process(spc) { _ in try Fixture.policy() }
            _ = try DeviceSimulator.openCKC(response.ckc, session: session)
        }
        #expect(throws: FairPlayError.self) { try fixture.ksm().parse(spcB) }
    }

    @Test("the simulator session survives a JSON round trip and never prints the session key")
    func sessionCodable() async throws {
        let fixture = try Fixture()
        let (spc, session) = try fixture.simulator.makeSPC(.init(assetID: [9, 9], returnTags: [.assetID]))
        let data = try JSONEncoder().encode(session)
        let decoded = try JSONDecoder().decode(DeviceSimulator.Session.self, from: data)
        let response = try await fixture.ksm().process(spc) { _ in try Fixture.policy() }
        #expect(try DeviceSimulator.openCKC(response.ckc, session: decoded).contentKey.bytes == Array(repeating: 0x42, count: 16))
        #expect(!"\(session.sessionKey)".contains(Hex.encode(session.sessionKey.bytes)))
    }

    @Test("a CKC for another SPC is refused by the device")
    func wrongCKC() async throws {
        let fixture = try Fixture()
        let (spc1, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 1]))
        let (_, session2) = try fixture.simulator.makeSPC(.init(assetID: [1, 1]))
        let ckc = try await fixture.ksm().process(spc1) { _ in try Fixture.policy() }.ckc
        #expect(throws: FairPlayError.self) { try DeviceSimulator.openCKC(ckc, session: session2) }
    }
}
