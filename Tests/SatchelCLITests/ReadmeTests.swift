import Foundation
import SatchelTestSupport
import Testing

/// README's commands are the ones that run: the round-trip block is executed exactly as written.
@Suite("README")
struct ReadmeTests {
    /// The first ```sh block after `marker` in README.md.
    static func block(after marker: String) throws -> String {
        let readme = try String(contentsOf: CLIRunner.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let afterMarker = try #require(readme.range(of: marker).map { readme[$0.upperBound...] }, "README has no \(marker)")
        let start = try #require(afterMarker.range(of: "```sh\n"))
        let body = afterMarker[start.upperBound...]
        let end = try #require(body.range(of: "\n```"))
        return String(body[..<end.lowerBound])
    }

    @Test("the round trip (package, register, serve, token, AES-128, Clear Key, FairPlay, play with ffmpeg) runs as written",
          .timeLimit(.minutes(3)))
    func roundTrip() async throws {
        let binary = try #require(CLIRunner.binary, "the satchel binary was not built")
        for tool in ["ffmpeg", "curl", "python3", "bash"] { try TestMedia.require(tool) }
        let script = try Self.block(after: "<!-- round-trip -->")
        for port in [8081, 8082] {
            #expect((try? RawConnection(port: port, timeout: 1)) == nil, "port \(port), which README's round trip uses, is taken")
        }
        let root = try TestMedia.temporaryDirectory("readme")
        let work = root.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("shared"),
                                                   withDestinationURL: CLIRunner.packageRoot.deletingLastPathComponent().appendingPathComponent("shared"))
        let file = root.appendingPathComponent("round-trip.sh")
        try ("set -euo pipefail\ntrap 'kill -9 $(jobs -p) 2>/dev/null; wait 2>/dev/null || true' EXIT\ncd \"\(work.path)\"\n"
             + "export PATH=\"\(binary.deletingLastPathComponent().path):$PATH\"\n" + script + "\n").write(to: file, atomically: true, encoding: .utf8)
        // The test process's children may inherit a blocked SIGTERM: the wrapper's trap ends them with SIGKILL.
        let result = try await TestMedia.offloaded { try ProcessRunner.run(URL(fileURLWithPath: "/bin/bash"), [file.path]) }
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect(result.stdout.contains("registered 1 key for asset movie") && result.stdout.contains("base64url"))
        #expect(result.stdout.contains("\"type\":\"temporary\"") || result.stdout.contains("\"keys\""), "the Clear Key license was printed")
        #expect(result.stdout.contains("CKC opened: R1 matches"))
        #expect(result.stdout.contains("\nplayed\n"), "\(result.stderr.suffix(600))")
        #expect((try? Data(contentsOf: work.appendingPathComponent("movie.key")).count) == 16)
    }
}
