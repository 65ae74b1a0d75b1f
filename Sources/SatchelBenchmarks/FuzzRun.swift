import Foundation
import SatchelFuzzTargets

/// `SatchelBenchmarks fuzz [--inputs N] [--seconds S] [--seed X] [--target NAME]`: every fuzz target for N inputs
/// (default 100,000) or S seconds, whichever comes first, seeds from a real package made with ffmpeg and the
/// packager. A trap ends the process (the last line printed names the target and the campaign's seed, so the
/// run can be repeated); hangs are counted. Not a benchmark, but it shares the release build and the
/// ffmpeg-made input.
struct FuzzRun {
    let inputs: Int
    let seconds: Double?
    let seed: UInt64
    let only: String?

    func run() throws {
        let work = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("satchel-fuzz-\(getpid())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let clip = work.appendingPathComponent("seed.mp4").path
        try Tool.run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=4", "-f", "lavfi",
                            "-i", "sine=frequency=440:sample_rate=48000:duration=4", "-c:v", "libx264", "-g", "50", "-pix_fmt", "yuv420p",
                            "-c:a", "aac", "-b:a", "64k", clip])
        let corpus = try FuzzCorpus.make(input: clip, workDirectory: work.path)
        print("Fuzzing: \(inputs) inputs per target\(seconds.map { String(format: " or %.0f s", $0) } ?? ""), seed \(seed)")
        var failed = false
        for target in FuzzTargets.all(corpus) where only == nil || target.name == only {
            FileHandle.standardError.write(Data("running \(target.name) (seed \(seed))…\n".utf8))
            let deadline = seconds.map { ContinuousClock.now + .milliseconds(Int($0 * 1000)) }
            let report = FuzzCampaign.run(target, count: inputs, seed: seed, deadline: deadline)
            print(report)
            if report.hangs > 0 { failed = true }
        }
        print(failed ? "hangs found" : "no crash, no hang")
        if failed { exit(1) }
    }
}
