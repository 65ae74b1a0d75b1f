#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import Crypto
import CryptoExtras
import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelSystem

// Satchel benchmarks. Run with: swift run -c release SatchelBenchmarks [fairplay] [packaging] [server] [playback] [downloads] [backplane] [events] [files] [--seconds N] [--parts] [--memory: playback's in-memory figures only] [--megabytes N: files' size, default 1024]
// `backplane` and `events` run two PostgreSQL nodes too when SATCHEL_BENCH_DATABASE_URL names a database they may empty.
// `downloads` also runs the emulated-link suite (root: a network namespace); `link [--rounds N]` runs that alone.
// The fuzz targets: swift run -c release SatchelBenchmarks fuzz [--inputs N] [--seconds S] [--seed X] [--target NAME] (scripts/fuzz).
// `scale [--factor F] [--operations N] [--only NAME,…]` (not in the default run) times every device and player request and the operator listings on a small
// store beside one seeded at an operator's size (SQLite; PostgreSQL too with SATCHEL_BENCH_DATABASE_URL, and SATCHEL_BENCH_SMALL_DATABASE_URL
// for the small store, so their rounds alternate); --factor scales the seeded sizes, --operations sets a round's least number of requests.
// Every figure is printed next to its reference measured in the same run; nothing here asserts.


setvbuf(stdout, nil, _IOLBF, 0)  // every line shows at once, also when piped, also if the run is cut short
// The servers measured here log as `satchel serve` does (swift-log's default handler formats a logger's metadata
// again whenever it changes: on every request, as Hummingbird names each one).
SatchelLogHandler.bootstrap(level: .info, sinks: .init())
let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "backplane-node" {  // one node of the backplane suite, in its own process
    exit(await BackplaneNode.run(Array(arguments.dropFirst())))
}
if arguments.first == "download-child", arguments.count >= 4 {  // the download suites measure the engine in its own process
    let list = Array(arguments)  // download-child URL DIRECTORY PARALLEL [MAX-PARALLEL (default: PARALLEL, fixed)]
    let parallelism = Int(list[3]) ?? 16
    exit(await DownloadBenchmark.child(url: list[1], directory: list[2], parallelism: parallelism,
                                       maxParallelism: list.count > 4 ? Int(list[4]) ?? parallelism : parallelism))
}
func value(_ name: String) -> String? {
    arguments.firstIndex(of: name).flatMap { arguments.index(after: $0) < arguments.endIndex ? arguments[arguments.index(after: $0)] : nil }
}
let seconds = value("--seconds").flatMap(Double.init) ?? 3
// Options that take a value (which is no suite's name).
let valued: Set<String> = ["--seconds", "--megabytes", "--operations", "--factor", "--seed", "--target", "--only", "--inputs", "--rounds"]
let suites = arguments.indices.filter { index in
    !arguments[index].hasPrefix("--") && Double(arguments[index]) == nil && (index == arguments.startIndex || !valued.contains(arguments[arguments.index(before: index)]))
}.map { arguments[$0] }
let knownSuites: Set<String> = ["fairplay", "packaging", "server", "playback", "downloads", "link", "fuzz", "backplane", "events", "files", "scale"]
if arguments.contains("--help") || arguments.contains("-h") || !suites.allSatisfy(knownSuites.contains) {
    // An unknown name would otherwise fall through to the default run of every suite (tens of minutes).
    FileHandle.standardError.write(Data("usage: SatchelBenchmarks [\(knownSuites.sorted().joined(separator: "|"))]… [--seconds N] [--parts]\n".utf8))
    exit(arguments.contains("--help") || arguments.contains("-h") ? 0 : 2)
}

if suites == ["fuzz"] {  // not part of the default run
    do {
        try FuzzRun(inputs: value("--inputs").flatMap(Int.init) ?? 100_000, seconds: value("--seconds").flatMap(Double.init),
                    seed: value("--seed").flatMap { UInt64($0) } ?? 20_261_123, only: value("--target")).run()
    } catch {
        FileHandle.standardError.write(Data("fuzz run failed: \(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

if suites.contains("scale") {  // not part of the default run: it seeds millions of rows
    do {
        try await ScaleBenchmark(operations: value("--operations").flatMap(Int.init) ?? 2_000, factor: value("--factor").flatMap(Double.init) ?? 1,
                             only: value("--only").map { Set($0.split(separator: ",").map(String.init)) }).run()
    } catch {
        FileHandle.standardError.write(Data("scale benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.isEmpty || suites.contains("fairplay") {
    do {
        try await FairPlayBenchmark(seconds: seconds, parts: arguments.contains("--parts")).run()
    } catch {
        FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.isEmpty || suites.contains("packaging") {
    do {
        try PackagingBenchmark().run()
    } catch {
        FileHandle.standardError.write(Data("packaging benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.isEmpty || suites.contains("server") {
    do {
        try await ServerBenchmark(seconds: max(Int(seconds), 3)).run()
    } catch {
        FileHandle.standardError.write(Data("server benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.isEmpty || suites.contains("backplane") {
    do {
        try await BackplaneBenchmark(seconds: max(Int(seconds), 3)).run()
    } catch {
        FileHandle.standardError.write(Data("backplane benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.isEmpty || suites.contains("events") {
    do {
        try await EventsBenchmark(seconds: max(Int(seconds), 3)).run()
    } catch {
        FileHandle.standardError.write(Data("events benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.isEmpty || suites.contains("files") {
    do {
        try await ProtectedFileBenchmark(megabytes: value("--megabytes").flatMap(Int.init) ?? 1024).run()
    } catch {
        FileHandle.standardError.write(Data("protected file benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.isEmpty || suites.contains("playback") {
    do {
        var playback = PlaybackBenchmark(seconds: max(Int(seconds), 3))
        playback.memoryOnly = arguments.contains("--memory")
        try await playback.run()
    } catch {
        FileHandle.standardError.write(Data("playback benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.isEmpty || suites.contains("downloads") {
    do {
        try await DownloadBenchmark().run()
    } catch {
        FileHandle.standardError.write(Data("download benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}

if suites.contains("downloads") || suites.contains("link") {  // needs root for the network namespace; not in the default run
    do {
        try await LinkBenchmark(rounds: value("--rounds").flatMap(Int.init) ?? 2).run()
    } catch {
        FileHandle.standardError.write(Data("link benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}
