import Crypto
import CryptoExtras
import Foundation
import SatchelBytes
import SatchelFairPlay

// Satchel benchmarks. Run with: swift run -c release SatchelBenchmarks [fairplay] [packaging] [server] [downloads] [--seconds N] [--parts]
// Every figure is printed next to its reference measured in the same run; nothing here asserts.

let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "download-child", arguments.count == 4 {  // the downloads suite measures the engine in its own process
    let list = Array(arguments)
    exit(await DownloadBenchmark.child(url: list[1], directory: list[2], parallelism: Int(list[3]) ?? 8))
}
let seconds = arguments.firstIndex(of: "--seconds").flatMap { Double(arguments[arguments.index(after: $0)]) } ?? 3
let suites = arguments.filter { !$0.hasPrefix("--") && Double($0) == nil }

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

if suites.isEmpty || suites.contains("downloads") {
    do {
        try await DownloadBenchmark().run()
    } catch {
        FileHandle.standardError.write(Data("download benchmark failed: \(error)\n".utf8))
        exit(1)
    }
}
