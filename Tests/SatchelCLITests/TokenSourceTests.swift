import Foundation
import SatchelTestSupport
import Testing

/// An entitlement token kept out of the process list: `--token-file FILE` and `$SATCHEL_TOKEN` work wherever
/// `--token` does, a token given twice or empty is refused, and `--help` says why to prefer them.
@Suite struct TokenSourceTests {
    /// `satchel arguments` with `environment` added.
    static func satchel(_ arguments: [String], environment: [String: String] = [:]) throws -> CLIRunner.Result {
        let result = try ProcessRunner.run(try #require(CLIRunner.binary), arguments, environment: environment)
        return CLIRunner.Result(status: result.status, stdout: result.stdout, stderr: result.stderr)
    }

    @Test("register with --token-file, acquire and renew with $SATCHEL_TOKEN: no token on the command line; both sources at once, an empty file, a missing file and no token at all are refused with what to do")
    func sources() async throws {
        let server = try await AgentCommandTests.Server("token-sources")
        try await server.start()
        defer { server.stop() }
        let device = server.directory.appendingPathComponent("device").path
        let token = try await server.token()
        let file = server.directory.appendingPathComponent("token.txt")
        try await TestMedia.offloaded {
            try (token + "\n").write(to: file, atomically: true, encoding: .utf8)
            let registered = try Self.satchel(["agent", "register", "--server", server.url, "--token-file", file.path, "--data-dir", device])
            #expect(registered.status == 0 && registered.stdout.trimmingCharacters(in: .whitespacesAndNewlines).count == 36, "\(registered.stderr)")
            let acquired = try Self.satchel(["license", "acquire", "movie", "--data-dir", device, "--persistent"], environment: ["SATCHEL_TOKEN": token])
            #expect(acquired.status == 0 && acquired.stdout.contains("valid, persistent"), "\(acquired.stderr)")
            let renewed = try Self.satchel(["license", "renew", "movie", "--data-dir", device, "--token-file", file.path])
            #expect(renewed.status == 0 && renewed.stdout.contains("renewed"), "\(renewed.stderr)")
            for output in [registered, acquired, renewed] { #expect(!output.stdout.contains(token) && !output.stderr.contains(token)) }

            let empty = server.directory.appendingPathComponent("empty.txt")
            try Data().write(to: empty)
            let refusals: [([String], [String: String], String)] = [
                (["--token", token, "--token-file", file.path], [:], "give --token or --token-file, not both"),
                (["--token-file", empty.path], [:], "holds no token"),
                (["--token-file", server.directory.appendingPathComponent("absent").path], [:], "cannot read the token file"),
                ([], ["SATCHEL_TOKEN": " "], "$SATCHEL_TOKEN holds no token"),
                ([], [:], "give --token-file FILE, set $SATCHEL_TOKEN, or give --token"),
            ]
            for (options, environment, words) in refusals {
                let refused = try Self.satchel(["license", "acquire", "movie", "--data-dir", device] + options, environment: environment)
                #expect(refused.status != 0 && refused.stderr.contains(words) && !refused.stderr.contains(token), "\(options): \(refused.stderr)")
            }
            for command in [["agent", "register"], ["license", "acquire"], ["license", "renew"], ["license", "sync"], ["play"], ["download", "add"],
                            ["license", "request", "clearkey"]] {
                let help = try Self.satchel(command + ["--help"])
                #expect(help.stdout.contains("--token-file") && help.stdout.contains("process list"), "\(command): \(help.stdout.suffix(400))")
            }
        }
    }
}
