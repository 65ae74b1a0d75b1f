import Foundation
import SatchelFuzzTargets
import SatchelTestSupport
import Testing

/// Every fuzz target runs a seeded, reproducible batch: no trap, no hang, and the mutations reach both the
/// accepting and the refusing paths of each parser (a batch that only ever hit one would test little).
/// `SatchelBenchmarks fuzz` (scripts/fuzz) runs the same targets for 100,000 inputs or more each.
@Suite("Fuzzing: a seeded batch per parser")
struct FuzzBatchTests {
    static let corpus: FuzzCorpus? = {
        guard let input = try? TestMedia.make("fuzz-seed", seconds: 4),
              let directory = try? TestMedia.temporaryDirectory("fuzz-corpus") else { return nil }
        return try? FuzzCorpus.make(input: input.path, workDirectory: directory.path)
    }()

    @Test("each target: 3,000 mutated inputs from real seeds, typed errors only, none slower than the hang limit",
          arguments: ["hls-media", "hls-master", "dash", "xml-spans", "smooth", "mp4", "cenc-fragment", "ts", "tllv", "json"])
    func batch(name: String) throws {
        let corpus = try #require(Self.corpus, "the seed corpus is made with ffmpeg and the packager")
        let target = try #require(FuzzTargets.all(corpus).first { $0.name == name })
        #expect(!target.seeds.isEmpty && target.seeds.allSatisfy { !$0.isEmpty })
        #expect(target.seeds.allSatisfy(target.run), "every real seed parses")
        let report = FuzzCampaign.run(target, count: 3_000, seed: 0x5A7C_4E11 ^ UInt64(name.utf8.count))
        #expect(report.inputs == 3_000 && report.hangs == 0, "\(report)")
        #expect(report.rejected > 0, "the mutations reach the refusing paths: \(report)")
    }

    @Test("the mutator is reproducible from its seed")
    func reproducible() {
        var first = FuzzMutator(seed: 42), second = FuzzMutator(seed: 42)
        let base = Array("#EXTM3U\n#EXTINF:2.0,\na.ts\n".utf8)
        for _ in 0..<100 { #expect(first.mutate(base, corpus: [base]) == second.mutate(base, corpus: [base])) }
    }
}
