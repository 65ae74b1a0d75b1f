import Foundation
import SatchelFuzzTargets
import SatchelMedia
import SatchelTestSupport
import Testing

/// Every fuzz target runs a seeded, reproducible batch: no trap, no hang, and the mutations reach both the
/// accepting and the refusing paths of each parser (a batch that only ever hit one would test little).
/// `SatchelBenchmarks fuzz` (scripts/fuzz) runs the same targets for 100,000 inputs or more each.
@Suite("Fuzzing: a seeded batch per parser")
struct FuzzBatchTests {
    /// The seed corpus (ffmpeg and three packager runs), made once on a thread of its own: the cases wait for it
    /// without holding a task-pool thread (a `static let` made in its initialiser held every waiting case's thread).
    static let making = Task<FuzzCorpus?, Never> {
        (try? await TestMedia.offloaded { () -> FuzzCorpus? in
            guard let input = try? TestMedia.make("fuzz-seed", seconds: 4),
                  let directory = try? TestMedia.temporaryDirectory("fuzz-corpus") else { return nil }
            return try? FuzzCorpus.make(input: input.path, workDirectory: directory.path)
        }) ?? nil
    }

    static var corpus: FuzzCorpus? {
        get async { await making.value }
    }

    @Test("each target: 3,000 mutated inputs from real seeds, typed errors only, none slower than the hang limit",
          arguments: ["hls-media", "hls-master", "dash", "xml-spans", "smooth", "mp4", "cenc-fragment", "ts", "tllv", "json", "sidx", "sealed-state", "event-stream"])
    func batch(name: String) async throws {
        let corpus = try #require(await Self.corpus, "the seed corpus is made with ffmpeg and the packager")
        let target = try #require(FuzzTargets.all(corpus).first { $0.name == name })
        #expect(!target.seeds.isEmpty && target.seeds.allSatisfy { !$0.isEmpty })
        #expect(target.seeds.allSatisfy(target.run), "every real seed parses")
        // 3,000 parses: seconds of CPU, on a thread of their own rather than one of the task pool's two.
        let report = try await TestMedia.offloaded { FuzzCampaign.run(target, count: 3_000, seed: 0x5A7C_4E11 ^ UInt64(name.utf8.count)) }
        #expect(report.inputs == 3_000 && report.hangs == 0, "\(report)")
        #expect(report.rejected > 0, "the mutations reach the refusing paths: \(report)")
    }

    @Test("the mutator is reproducible from its seed")
    func reproducible() {
        var first = FuzzMutator(seed: 42), second = FuzzMutator(seed: 42)
        let base = Array("#EXTM3U\n#EXTINF:2.0,\na.ts\n".utf8)
        for _ in 0..<100 { #expect(first.mutate(base, corpus: [base]) == second.mutate(base, corpus: [base])) }
    }

    @Test("what the fuzzer found stays fixed: a fragment decode time near Int64.max and a sample before the segment are typed errors, not traps")
    func fuzzFindings() async throws {
        let corpus = try #require(await Self.corpus)
        let file = try #require(corpus.mp4Files.first)
        #expect((try? MP4Demuxer.demux(file)) != nil)
        func patched(_ fourCC: String, at skip: Int, with value: [UInt8]) throws -> [UInt8] {
            let name = Array(fourCC.utf8)
            let at = try #require((0...(file.count - 4)).first { file[$0..<($0 + 4)].elementsEqual(name) })
            var bytes = file
            bytes.replaceSubrange((at + skip)..<(at + skip + value.count), with: value)
            return bytes
        }
        // tfdt version 1: the base decode time follows the fourCC and the version/flags word.
        let lateDecodeTime = try patched("tfdt", at: 8, with: [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(throws: MediaError.self) { try MP4Demuxer.demux(lateDecodeTime) }
        // A trun data offset pointing before the start of the segment (decryption read out of bounds).
        let segment = try #require(corpus.cencSegments.first)
        let trun = try #require((0...(segment.count - 4)).first { segment[$0..<($0 + 4)].elementsEqual(Array("trun".utf8)) })
        var before = segment
        before.replaceSubrange((trun + 12)..<(trun + 16), with: [0x80, 0x00, 0x00, 0x00])
        let decryptor = try #require(corpus.cencDecryptor)
        #expect(throws: (any Error).self) { try decryptor.decrypt(segment: before, key: corpus.cencKey) }
    }
}
