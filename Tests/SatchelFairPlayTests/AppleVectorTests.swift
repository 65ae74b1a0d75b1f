import Foundation
import SatchelBytes
import Testing
@testable import SatchelFairPlay

@Suite("Apple FairPlay SDK vectors")
struct AppleVectorTests {
    let parser: SPCParser

    init() throws {
        parser = SPCParser(credentials: [try Conformance.developmentCredential()])
    }

    @Test("each SPC parses, passes the integrity check and gives the documented SK", arguments: Conformance.vectors)
    func parsesSPC(vector: Conformance.Vector) async throws {
        let spc = try parser.parse(try Conformance.bytes(vector.spcPath))
        #expect(Hex.encode(spc.header.certificateHash) == "5561980aa51f03aa04bca24556c841a71736c771")
        #expect(Hex.encode(spc.session.sessionKey.bytes) == vector.sessionKey)
        #expect(Hex.encode(spc.assetID) == vector.assetID)
        #expect(spc.session.r1.count == 44)
        #expect(spc.r2.count == 21)
        #expect(spc.antiReplaySeed.count == 16)
        #expect(spc.usedVersion == 1)
        #expect((spc.playbackState != nil) == vector.lease)
        #expect(!spc.undefinedTLLVs.isEmpty, "Apple SPCs carry undefined TLLVs, which must be kept")
        #expect(spc.returnRequest.allSatisfy { spc.tllvs.contains($0) })
    }

    @Test("FPS/spc1 matches the values verify_ckc prints in the guide")
    func spc1MatchesGuideListing() async throws {
        let spc = try parser.parse(try Conformance.bytes("FPS/spc1.bin"))
        #expect(spc.header.payloadLength == 2688)
        #expect(Hex.encode(spc.header.iv) == "5d1644eaec11f983147541e46eeb2774")
        #expect(Hex.encode(spc.antiReplaySeed) == "f3c69d1e8cc4275a6d3286d332613e13")
        #expect(Hex.encode(spc.r2) == "11f7be612ca95ef5e007ce51896ae4502ca3d8801b")
        #expect(Hex.encode(spc.session.integrity) == "54a16be0137ef259ab3e4fc79690825f")
        #expect(Hex.encode(spc.session.r1) == "2752008e1c11e224e8eb07eec4a09d17440a6372d5dc2109e550ecac9860613f8b7a8be6b45a69832d9e8ce7")
        #expect(spc.transactionID.map { Hex.encode($0) } == "1473e5cc53e1e5d6")
        #expect(spc.returnRequest.map(\.description) == [
            "1bf7f53f5d5d5a1f", "47aa7ad3440577de", "f911f04da54bf599", "ba08cc74dac9176d",
            "130d994cb894b9e3", "66c823f379b87bb5", "18d42c5f8e545a4b",
        ])
        let ar = try FairPlayCrypto.antiReplayKey(r1: spc.session.r1, seed: spc.antiReplaySeed)
        #expect(Hex.encode(ar) == "cb0d802549396b9c8d636d5e64594cbe")
    }

    @Test("each Apple CKC opens to the documented key, IV and durations", arguments: Conformance.vectors)
    func opensAppleCKC(vector: Conformance.Vector) async throws {
        let spc = try parser.parse(try Conformance.bytes(vector.spcPath))
        let ckcBytes = try Conformance.bytes(vector.ckcPath)
        let ckc = try CKC.open(ckcBytes, for: spc)
        #expect(Hex.encode(ckc.contentKey.bytes) == vector.contentKey)
        #expect(Hex.encode(ckc.contentIV) == vector.contentIV)
        #expect(ckc.r1 == spc.session.r1)
        if vector.lease {
            #expect(ckc.duration?.leaseSeconds == 120)
            #expect(ckc.duration?.rentalSeconds == 0)
            #expect(ckc.duration?.keyType == .leaseOnly)
            // Apple's SDK 4.1.0 CKCs write 0 in the reserved field; the guide (Table 5-3) says
            // 0x86d34a3a, which is what Satchel writes. Devices accept both.
            #expect(ckc.duration?.reserved == 0)
        } else {
            #expect(ckc.duration == nil)
        }
        for tag in spc.returnRequest {
            #expect(ckc.tllvs[tag] == spc.tllvs[tag], "tag \(tag) returned verbatim")
        }
        let report = try InspectionReport(spc: spc, ckcBytes: ckcBytes)
        #expect(report.ckc?.r1Matches == true)
        #expect(report.ckc?.returnedTagsMatch == true)
    }

    @Test("our CKC for each SPC carries the same encrypted-CK value, R1 and requested tags as Apple's", arguments: Conformance.vectors)
    func buildsEquivalentCKC(vector: Conformance.Vector) async throws {
        let spcBytes = try Conformance.bytes(vector.spcPath)
        let spc = try parser.parse(spcBytes)
        let apple = try CKC.open(try Conformance.bytes(vector.ckcPath), for: spc)
        let policy = try ContentKeyPolicy(
            contentKey: SecretBytes(hex: vector.contentKey, count: 16),
            contentIV: try Hex.decode(vector.contentIV, count: 16),
            duration: vector.lease ? .lease(120) : nil)
        let ksm = KeySecurityModule(configuration: .init(credentials: [try Conformance.developmentCredential()]))
        let response = try await ksm.process(spcBytes) { _ in policy }
        let ours = try CKC.open(response.ckc, for: spc)
        #expect(ours.tllvs[.encryptedContentKey]?.value == apple.tllvs[.encryptedContentKey]?.value)
        #expect(ours.r1 == apple.r1)
        #expect(ours.duration?.leaseSeconds == apple.duration?.leaseSeconds)
        #expect(ours.duration?.rentalSeconds == apple.duration?.rentalSeconds)
        #expect(ours.duration?.keyType == apple.duration?.keyType)
        #expect(ours.duration.map { $0.reserved == ContentKeyDuration.reservedValue } ?? true)
        for tag in spc.returnRequest {
            #expect(ours.tllvs[tag] == spc.tllvs[tag], "tag \(tag) returned verbatim")
        }
        #expect(Set(response.summary.returnedTags) == Set(spc.returnRequest))
        let report = try InspectionReport(spc: spc, ckcBytes: response.ckc)
        #expect(report.ckc?.r1Matches == true && report.ckc?.returnedTagsMatch == true)
        // A fresh random CKC IV every time.
        let again = try await ksm.process(spcBytes) { _ in policy }
        #expect(Array(again.ckc[8..<24]) != Array(response.ckc[8..<24]))
    }

    @Test("the wrong DASk fails the integrity check with a typed error")
    func wrongDASk() async throws {
        let credential = try FairPlayCredential(
            certificate: try Conformance.certificate(), privateKey: try Conformance.privateKeyPEM(),
            dFunction: DevelopmentDFunction(dask: SecretBytes([UInt8](repeating: 7, count: 16))))
        #expect(throws: FairPlayError.integrityCheckFailed) {
            try SPCParser(credentials: [credential]).parse(try Conformance.bytes("FPS/spc1.bin"))
        }
    }

    @Test("an SPC for an unconfigured certificate is refused with its hash")
    func unknownCertificate() async throws {
        var bytes = try Conformance.bytes("FPS/spc1.bin")
        bytes[152] ^= 0xff
        #expect(throws: FairPlayError.self) { try parser.parse(bytes) }
        do {
            _ = try parser.parse(bytes)
        } catch {
            #expect(error.code == "unknown-certificate")
            #expect(error.appleErrorCode == -42679)
        }
    }
}
