import Foundation
import SatchelBytes
import Testing
@testable import SatchelFairPlay

@Suite("KSM checks")
struct KSMCheckTests {
    // MARK: versions (guide Tables 2-8 and 2-9)

    @Test("good-practice configurations of Table 2-8 are accepted without a downgrade")
    func table28() async throws {
        let rows: [(server: [UInt32], supported: [UInt32], used: UInt32)] = [
            ([1], [1], 1), ([1, 2], [1], 1), ([1, 2], [1, 2], 2), ([2], [1, 2], 2),
        ]
        for row in rows {
            let result = try VersionNegotiation.negotiate(deviceSupported: row.supported, deviceUsed: row.used,
                                                          server: row.server, rejectDowngrade: true)
            #expect(!result.isDowngrade)
            #expect(result.bestCommon == row.used)
        }
    }

    @Test("Table 2-9: newer device is reported, version mismatch rejected, downgrade reported or rejected")
    func table29() async throws {
        let newer = try VersionNegotiation.negotiate(deviceSupported: [1, 2], deviceUsed: 1, server: [1], rejectDowngrade: true)
        #expect(newer.deviceSupportsNewer && !newer.isDowngrade)

        await #expect(throws: FairPlayError.noCommonProtocolVersion(device: [1], server: [2])) {
            try VersionNegotiation.negotiate(deviceSupported: [1], deviceUsed: 1, server: [2], rejectDowngrade: false)
        }
        await #expect(throws: FairPlayError.protocolVersionNotSupported(used: 3, server: [1, 2])) {
            try VersionNegotiation.negotiate(deviceSupported: [1, 2, 3], deviceUsed: 3, server: [1, 2], rejectDowngrade: false)
        }
        let reported = try VersionNegotiation.negotiate(deviceSupported: [1, 2], deviceUsed: 1, server: [1, 2], rejectDowngrade: false)
        #expect(reported.isDowngrade && reported.bestCommon == 2)
        await #expect(throws: FairPlayError.protocolDowngrade(used: 1, best: 2)) {
            try VersionNegotiation.negotiate(deviceSupported: [1, 2], deviceUsed: 1, server: [1, 2], rejectDowngrade: true)
        }
    }

    @Test("the KSM applies version negotiation to real SPCs")
    func ksmVersions() async throws {
        let fixture = try Fixture()
        let (downgraded, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], supportedVersions: [1, 2], usedVersion: 1))
        let lenient = fixture.ksm { $0.supportedVersions = [1, 2] }
        #expect(try await lenient.process(downgraded) { _ in try Fixture.policy() }.versions.isDowngrade)
        let strict = fixture.ksm { $0.supportedVersions = [1, 2]; $0.rejectDowngrade = true }
        await #expect(throws: FairPlayError.protocolDowngrade(used: 1, best: 2)) { try await strict.process(downgraded) { _ in try Fixture.policy() } }
        let (noCommon, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], supportedVersions: [7], usedVersion: 7))
        await #expect(throws: FairPlayError.noCommonProtocolVersion(device: [7], server: [1])) {
            try await fixture.ksm().process(noCommon) { _ in try Fixture.policy() }
        }
    }

    // MARK: SPC creation date window

    @Test("SPC creation date must be within the window when one is configured")
    func creationWindow() async throws {
        let fixture = try Fixture()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func spc(createdOffset: Int64) throws -> [UInt8] {
            let created = UInt32(1_800_000_000 + createdOffset)
            return try fixture.simulator.makeSPC(.init(assetID: [1, 2], playbackState: .init(creationDate: created, state: .readyToStart, sessionID: 1))).spc
        }
        let ksm = fixture.ksm { $0.maxSPCAge = 60; $0.clock = FixedClock(now) }
        _ = try await ksm.process(try spc(createdOffset: -59)) { _ in try Fixture.policy() }
        _ = try await ksm.process(try spc(createdOffset: 30)) { _ in try Fixture.policy() }
        await #expect(throws: FairPlayError.spcCreationDateOutOfWindow(created: 1_800_000_000 - 61, now: 1_800_000_000, window: 60)) {
            try await ksm.process(try spc(createdOffset: -61)) { _ in try Fixture.policy() }
        }
        await #expect(throws: FairPlayError.self) { try await ksm.process(try spc(createdOffset: 3600)) { _ in try Fixture.policy() } }
        // Without a window, an old SPC is fine (Apple's vectors are years old).
        _ = try await fixture.ksm().process(try spc(createdOffset: -100_000)) { _ in try Fixture.policy() }
    }

    // MARK: streaming and capabilities

    @Test("the streaming policy hook refuses AirPlay and AV adapters when the policy says so")
    func streamingHook() async throws {
        let fixture = try Fixture()
        for target in [StreamingTarget.airPlay, .avAdapter] {
            let (spc, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], streamingIndicator: target.indicatorValue))
            let denied = try Fixture.policy { $0.streaming = StreamingPermissions(airPlay: false, avAdapter: false) }
            await #expect(throws: FairPlayError.streamingTargetNotAllowed(target)) { try await fixture.ksm().process(spc) { _ in denied } }
            let response = try await fixture.ksm().process(spc) { _ in try Fixture.policy() }
            #expect(response.spc.streamingTarget == target)
        }
        let (local, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], streamingIndicator: 12345))
        let denied = try Fixture.policy { $0.streaming = StreamingPermissions(airPlay: false, avAdapter: false) }
        #expect(try await fixture.ksm().process(local) { _ in denied }.spc.streamingTarget == .device)
    }

    @Test("offline keys as the reference KSM: no Capabilities TLLV gets one, a TLLV without the bit is refused; strict mode needs the bit")
    func offlineKeyRules() async throws {
        let fixture = try Fixture()
        let offline = try OfflineKeyPolicy(contentID: Array(repeating: 1, count: 16), storageSeconds: 100, playbackSeconds: 10)
        let policy = try Fixture.policy { $0.offlineKey = offline }
        let (old, oldSession) = try fixture.simulator.makeSPC(.init(assetID: [1, 2]))
        #expect(try await DeviceSimulator.openCKC(fixture.ksm().process(old) { _ in policy }.ckc, session: oldSession).offlineKey == offline,
                      "a device before iOS 11 sends no Capabilities TLLV and gets the Offline Key TLLV")
        await #expect(throws: FairPlayError.clientLacksCapability("the Offline Key TLLV (dual expiry)")) {
            try await fixture.ksm { $0.requireOfflineKeyCapability = true }.process(old) { _ in policy }
        }
        let (without, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], capabilities: .init(hdcpEnforcement: true, offlineKey: false)))
        await #expect(throws: FairPlayError.clientLacksCapability("the Offline Key TLLV (dual expiry)")) {
            try await fixture.ksm().process(without) { _ in policy }
        }
        let (capable, session) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], capabilities: .init(hdcpEnforcement: false, offlineKey: true)))
        #expect(try await DeviceSimulator.openCKC(fixture.ksm().process(capable) { _ in policy }.ckc, session: session).offlineKey == offline)
        #expect(throws: FairPlayError.self) {
            try ContentKeyPolicy(contentKey: SecretBytes.random(16), contentIV: Array(repeating: 0, count: 16),
                                 duration: .lease(10), offlineKey: offline)
        }
        await #expect(throws: FairPlayError.invalidLength(what: "offline content ID", expected: 16, actual: 3)) {
            try OfflineKeyPolicy(contentID: [1, 2, 3], storageSeconds: 1, playbackSeconds: 1)
        }
    }

    @Test("HDCP TLLVs of 16 bytes (the reference KSM) and 8 bytes both read; an undefined level is kept for the report, not refused")
    func hdcpForms() throws {
        func block(_ level: UInt64, reserved: Bool) -> TLLV {
            var writer = ByteWriter()
            writer.writeUInt64(level)
            if reserved { writer.writeUInt64(0) }
            return TLLV(tag: .hdcpEnforcement, value: writer.bytes, padding: Array(repeating: 0, count: reserved ? 0 : 8))
        }
        for reserved in [true, false] {
            #expect(try CKC.hdcpLevel(block(HDCPRequirement.type1.rawValue64, reserved: reserved)) == HDCPRequirement.type1.rawValue64)
        }
        let odd = try CKC.hdcpLevel(block(0x1234, reserved: true))
        #expect(odd == 0x1234 && HDCPRequirement(rawValue64: odd) == nil)
        #expect(throws: FairPlayError.invalidCKC("HDCP enforcement TLLV value is 4 bytes, needs 8 or 16")) {
            try CKC.hdcpLevel(TLLV(tag: .hdcpEnforcement, value: [1, 2, 3, 4], padding: Array(repeating: 0, count: 12)))
        }
    }

    @Test("capability bits decode HDCP enforcement and offline key")
    func capabilityBits() async throws {
        let fixture = try Fixture()
        let (spc, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], capabilities: Capabilities(high: 0xF0, low: 0b01)))
        let parsed = try fixture.ksm().parse(spc)
        #expect(parsed.capabilities?.hdcpEnforcement == true)
        #expect(parsed.capabilities?.offlineKey == false)
        #expect(parsed.capabilities?.high == 0xF0)
    }

    // MARK: Sync SPC

    @Test("a Sync SPC is recognised and its values handed to the caller; other versions are not Sync SPCs")
    func syncSPC() async throws {
        let fixture = try Fixture()
        let contentID = Array(repeating: UInt8(0xAB), count: 16)
        let (sync, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], sync: SyncInfo(contentID: contentID, durationToExpiry: 3600)))
        let response = try await fixture.ksm().process(sync) { _ in try Fixture.policy() }
        #expect(response.sync?.contentID == contentID)
        #expect(response.sync?.durationToExpiry == 3600)
        let (invalid, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], sync: SyncInfo(version: 2, contentID: contentID, durationToExpiry: 1)))
        let other = try await fixture.ksm().process(invalid) { _ in try Fixture.policy() }
        #expect(other.sync == nil && !other.spc.isSyncSPC && other.spc.sync?.version == 2)
    }

    // MARK: tag return and malformed fields

    @Test("a return request naming an absent tag, or a tag the KSM generates, is refused")
    func returnRequestEdges() async throws {
        let fixture = try Fixture()
        let (absent, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], returnTags: [TLLVTag(0xDEAD)]))
        await #expect(throws: FairPlayError.missingReturnedTag(TLLVTag(0xDEAD))) { try await fixture.ksm().process(absent) { _ in try Fixture.policy() } }
        let impostor = TLLV(tag: .encryptedContentKey, value: Array(repeating: 0, count: 32))
        let (colliding, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], extraTLLVs: [impostor], returnTags: [.encryptedContentKey]))
        await #expect(throws: FairPlayError.duplicateTag(.encryptedContentKey)) { try await fixture.ksm().process(colliding) { _ in try Fixture.policy() } }
    }

    @Test("asset IDs outside 2-200 bytes are refused on both sides")
    func assetIDLength() async throws {
        let fixture = try Fixture()
        #expect(throws: FairPlayError.invalidAssetIDLength(1)) { try fixture.simulator.makeSPC(.init(assetID: [1])) }
        #expect(throws: FairPlayError.invalidAssetIDLength(201)) { try fixture.simulator.makeSPC(.init(assetID: Array(repeating: 1, count: 201))) }
        let error = FairPlayError.invalidAssetIDLength(1)
        #expect(error.appleErrorCode == -42675)
    }

    @Test("SPC containers: bad version, short, trailing bytes and misaligned payloads are typed errors")
    func containers() async throws {
        let fixture = try Fixture()
        let (spc, _) = try fixture.simulator.makeSPC(.init(assetID: [1, 2]))
        var badVersion = spc
        badVersion[3] = 2
        #expect(throws: FairPlayError.unsupportedSPCVersion(2)) { try fixture.ksm().parse(badVersion) }
        await #expect(throws: FairPlayError.spcTruncated(length: 100, needed: 176)) { try fixture.ksm().parse(Array(spc.prefix(100))) }
        #expect(throws: FairPlayError.spcTrailingBytes(count: 3)) { try fixture.ksm().parse(spc + [1, 2, 3]) }
        await #expect(throws: FairPlayError.spcTruncated(length: spc.count - 16, needed: spc.count)) { try fixture.ksm().parse(Array(spc.dropLast(16))) }
    }

    @Test("playback states 1 and 3 always carry the key, even when withholding is on")
    func statesCarryKey() async throws {
        let fixture = try Fixture()
        let policy = try Fixture.policy { $0.withholdKeyWhilePlaying = true; $0.duration = .lease(30) }
        for state in [PlaybackState.readyToStart, .leaseExpiring, .other(0x1234)] {
            let (spc, session) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], playbackState: .init(creationDate: 1, state: state, sessionID: 9)))
            let ckc = try await DeviceSimulator.openCKC(fixture.ksm().process(spc) { _ in policy }.ckc, session: session)
            #expect(ckc.contentKey.bytes == Array(repeating: 0x42, count: 16))
            #expect(ckc.duration == .lease(30))
        }
    }

    @Test("errors never contain key material")
    func errorsHoldNoSecrets() async throws {
        let dask = Conformance.developmentDASk
        let errors: [FairPlayError] = [.integrityCheckFailed, .spcKeyDecryptionFailed, .invalidLength(what: "content key", expected: 16, actual: 3)]
        for error in errors { #expect(!error.description.contains(dask)) }
    }
}
