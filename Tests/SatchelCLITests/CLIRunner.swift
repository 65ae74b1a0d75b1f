import Foundation
import SatchelTestSupport
import Testing

/// Runs the `satchel` binary that `swift test` built beside the test bundle.
enum CLIRunner {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static let credentials = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/conformance/fairplay/credentials").path
    static let vectors = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/conformance/fairplay").path
    static let dask = "d87ce7a26081de2e8eb8acef3a6dc179"

    static var binary: URL? {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL,
            Bundle.main.bundleURL.deletingLastPathComponent(),
            packageRoot.appendingPathComponent(".build/debug"),
        ].map { $0.appendingPathComponent("satchel") }
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// ``run(_:)`` from a task: the command is waited for on a thread of its own, not one of the task pool's few, which
    /// the servers in the test process need (the compiler chooses this one in async code).
    static func run(_ arguments: [String]) async throws -> Result {
        try await TestMedia.offloaded { try run(arguments) }
    }

    /// Runs `satchel` with `arguments` to its end, waiting on this thread.
    static func run(_ arguments: [String]) throws -> Result {
        let binary = try #require(binary, "the satchel binary was not built")
        let result = try ProcessRunner.run(binary, arguments)
        return Result(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
