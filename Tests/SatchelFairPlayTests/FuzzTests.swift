import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing
@testable import SatchelFairPlay

/// Hostile input must end in a typed `FairPlayError` or a CKC the device can open; never a crash.
@Suite("Fuzzing the KSM")
struct FuzzTests {
    enum Outcome { case ckc, typedError }

    /// Runs one input through the KSM and classifies the outcome; records an issue for anything else.
    func feed(_ ksm: KeySecurityModule, _ bytes: [UInt8]) async -> Outcome? {
        do {
            let response = try await ksm.process(bytes) { _ in try Fixture.policy() }
            _ = try CKC.open(response.ckc, for: response.spc)
            return .ckc
        } catch is FairPlayError {
            return .typedError
        } catch {
            Issue.record("untyped error \(error)")
            return nil
        }
    }

    @Test("random bytes of every length are refused with typed errors")
    func randomBytes() async throws {
        let ksm = try Fixture().ksm()
        var random = SplitMix64(seed: 1)
        for index in 0..<3000 {
            if index % 25 == 0 { await Task.yield() }  // bounded steps: the task pool's other work runs between them
            let length = index < 400 ? index : Int.random(in: 0...4000, using: &random)
            var bytes = random.bytes(length)
            if index % 2 == 0 && bytes.count >= 8 { bytes.replaceSubrange(0..<8, with: [0, 0, 0, 1, 0, 0, 0, 0]) }
            #expect(await feed(ksm, bytes) == .typedError)
        }
    }

    @Test("mutated Apple and simulator SPCs: bit flips, truncation, extension, length fields")
    func mutatedSPCs() async throws {
        let fixture = try Fixture()
        let ksm = fixture.ksm()
        var seeds = try Conformance.vectors.map { try Conformance.bytes($0.spcPath) }
        for _ in 0..<4 {
            seeds.append(try fixture.simulator.makeSPC(.init(assetID: [1, 2, 3], playbackState: .init(creationDate: 1, state: .readyToStart, sessionID: 2),
                                                             returnTags: [.assetID, .transactionID])).spc)
        }
        var random = SplitMix64(seed: 2)
        var outcomes: [Outcome: Int] = [:]
        for index in 0..<4000 {
            if index % 25 == 0 { await Task.yield() }  // bounded steps: the task pool's other work runs between them
            var bytes = seeds[index % seeds.count]
            switch index % 5 {
            case 0:  // flip bits anywhere
                for _ in 0...Int.random(in: 0...3, using: &random) {
                    let position = Int.random(in: 0..<bytes.count, using: &random)
                    bytes[position] ^= UInt8.random(in: 1...255, using: &random)
                }
            case 1:  // flip bits inside the encrypted payload only: garbage TLLVs after decryption
                let position = Int.random(in: 176..<bytes.count, using: &random)
                bytes[position] ^= UInt8.random(in: 1...255, using: &random)
            case 2:  // truncate
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
            case 3:  // extend
                bytes += random.bytes(Int.random(in: 1...64, using: &random))
            default:  // corrupt the payload length field with extreme values
                let lengths: [UInt32] = [0, 1, 15, 16, UInt32.max, UInt32.max - 15, 0x8000_0000, UInt32(bytes.count)]
                let value = lengths[Int.random(in: 0..<lengths.count, using: &random)]
                bytes.replaceSubrange(172..<176, with: [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)])
            }
            if let outcome = await feed(ksm, bytes) { outcomes[outcome, default: 0] += 1 }
        }
        #expect(outcomes[.typedError, default: 0] > 0)
    }

    @Test("hostile plaintext payloads sealed into valid containers reach every TLLV check")
    func hostilePayloads() async throws {
        let fixture = try Fixture()
        let ksm = fixture.ksm()
        var random = SplitMix64(seed: 3)
        var outcomes: [Outcome: Int] = [:]
        var codes: Set<String> = []
        for index in 0..<3000 {
            if index % 25 == 0 { await Task.yield() }  // bounded steps: the task pool's other work runs between them
            // Start from a well-formed payload, then break it structurally.
            let (good, _) = try fixture.simulator.makeSPC(.init(
                assetID: random.bytes(Int.random(in: 2...20, using: &random)),
                playbackState: Bool.random(using: &random) ? .init(creationDate: 5, state: .playingOrPaused, sessionID: 1) : nil,
                returnTags: Bool.random(using: &random) ? [.assetID] : []))
            let parsed = try ksm.parse(good)
            var blocks = parsed.tllvs.blocks
            switch index % 8 {
            case 0:  // drop a block
                blocks.remove(at: Int.random(in: 0..<blocks.count, using: &random))
            case 1:  // duplicate a block
                blocks.append(blocks[Int.random(in: 0..<blocks.count, using: &random)])
            case 2:  // change a defined block's value length
                let position = Int.random(in: 0..<blocks.count, using: &random)
                let old = blocks[position]
                blocks[position] = TLLV(tag: old.tag, value: random.bytes(Int.random(in: 0...130, using: &random)))
            case 3:  // random tag return requests
                blocks.removeAll { $0.tag == .tagReturnRequest }
                blocks.append(TLLV(tag: .tagReturnRequest, value: random.bytes(Int.random(in: 0...40, using: &random))))
            case 4:  // random undefined blocks
                for _ in 0..<Int.random(in: 1...5, using: &random) {
                    blocks.append(TLLV(tag: TLLVTag(random.next()), value: random.bytes(Int.random(in: 0...64, using: &random))))
                }
            case 5:  // odd playback states, sync values, streaming indicators
                blocks.removeAll { [.mediaPlaybackState, .sync, .streamingIndicator].contains($0.tag) }
                blocks.append(TLLV(tag: .mediaPlaybackState, value: random.bytes([16, 15, 17, 0][index % 4])))
                blocks.append(TLLV(tag: .sync, value: random.bytes([28, 27, 40][index % 3])))
                blocks.append(TLLV(tag: .streamingIndicator, value: random.bytes([8, 7][index % 2])))
            default:
                break
            }
            var payload = TLLVCodec.encode(blocks)
            if index % 8 == 6 {  // corrupt raw header fields of a block
                let headerOffsets = headerPositions(blocks)
                let offset = headerOffsets[Int.random(in: 0..<headerOffsets.count, using: &random)] + Int.random(in: 8..<16, using: &random)
                payload[offset] = UInt8.random(in: 0...255, using: &random)
            }
            if index % 8 == 7 { payload += random.bytes(16) }  // trailing garbage block
            let sealed = try fixture.simulator.seal(payload: payload)
            if let outcome = await feed(ksm, sealed) { outcomes[outcome, default: 0] += 1 }
            do { _ = try await ksm.process(sealed) { _ in try Fixture.policy() } } catch let error as FairPlayError { codes.insert(error.code) } catch {}
        }
        #expect(outcomes[.ckc, default: 0] > 0, "some mutations stay valid")
        #expect(outcomes[.typedError, default: 0] > 0)
        #expect(codes.count >= 5, "many distinct checks were reached: \(codes.sorted())")
    }

    @Test("random and mutated CKCs are refused by the device with typed errors")
    func mutatedCKCs() async throws {
        let fixture = try Fixture()
        let (spc, session) = try fixture.simulator.makeSPC(.init(assetID: [1, 2], returnTags: [.assetID]))
        let ckc = try await fixture.ksm().process(spc) { _ in try Fixture.policy() }.ckc
        var random = SplitMix64(seed: 4)
        for index in 0..<3000 {
            if index % 25 == 0 { await Task.yield() }  // bounded steps: the task pool's other work runs between them
            var bytes = index % 3 == 0 ? random.bytes(Int.random(in: 0...600, using: &random)) : ckc
            if index % 3 == 1 {
                let position = Int.random(in: 0..<bytes.count, using: &random)
                bytes[position] ^= UInt8.random(in: 1...255, using: &random)
            } else if index % 3 == 2 {
                bytes = Array(bytes.prefix(Int.random(in: 0..<bytes.count, using: &random)))
            }
            do {
                _ = try DeviceSimulator.openCKC(bytes, session: session)
                // Only a flip in the reserved header bytes 4..7 leaves a CKC valid.
            } catch {
                // Typed throws: whatever fails is a FairPlayError, checked by the compiler.
                _ = error as FairPlayError
            }
        }
    }

    private func headerPositions(_ blocks: [TLLV]) -> [Int] {
        var offsets: [Int] = []
        var offset = 0
        for block in blocks {
            offsets.append(offset)
            offset += TLLV.headerSize + block.blockLength
        }
        return offsets
    }
}
