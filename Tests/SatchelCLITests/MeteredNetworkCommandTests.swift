import Foundation
import SatchelTestSupport
import Testing

/// Seed 003 `downloadOverCellular` (default NO: "If this value is NO, downloads will never happen over a cellular
/// connection") through the command line: `download run` asks NetworkManager (here an `nmcli` on PATH that answers
/// with a real NetworkManager's recorded answers), says once which network it saw, and follows
/// `--download-over-cellular` and `--metered-unknown` (default deny: an unknown network counts as metered).
@Suite("satchel download run on metered and unknown networks")
struct MeteredNetworkCommandTests {
    static let fixtures = CLIRunner.packageRoot.appendingPathComponent("Tests/Fixtures/nmcli")

    @Test("metered: nothing downloads unless --download-over-cellular; unknown: counts as metered unless --metered-unknown allow or SATCHEL_METERED_UNKNOWN=allow; the network seen is said once")
    func meteredAndUnknown() async throws {
        let (origin, directory) = try await DownloadCommandTests.origin(seconds: 2)
        defer { origin.stop() }
        let data = directory.appendingPathComponent("data").path
        let tools = directory.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: tools, withIntermediateDirectories: true)
        let answer = directory.appendingPathComponent("answer.txt")
        let nmcli = tools.appendingPathComponent("nmcli")
        func install(_ script: String) throws {
            try script.write(to: nmcli, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: nmcli.path)
        }
        try install("#!/bin/sh\ncat '\(answer.path)'\n")
        // Not the test run's SATCHEL_METERED_UNKNOWN=allow: the defaults are what is tested here.
        let environment = ["PATH": tools.path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"), "SATCHEL_METERED_UNKNOWN": ""]
        func run(_ arguments: [String], _ extra: [String: String] = [:]) async throws -> ProcessRunner.Result {
            let binary = try #require(CLIRunner.binary)
            return try await TestMedia.offloaded { try ProcessRunner.run(binary, arguments, environment: environment.merging(extra) { $1 }) }
        }
        func setAnswer(_ fixture: String) throws {
            try FileManager.default.removeItem(at: answer)
            try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent(fixture), to: answer)
        }
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("metered-yes.txt"), to: answer)

        #expect(try await run(["download", "add", origin.url("asset/master.m3u8"), "--data-dir", data, "--id", "a"]).status == 0)
        let held = try await run(["download", "run", "--data-dir", data, "--headroom", "0"])
        #expect(held.status == 3, "\(held.stderr)")
        #expect(held.stderr.components(separatedBy: "satchel: network: metered (NetworkManager); nothing downloads").count == 2, "said once: \(held.stderr)")
        var rows = try await DownloadCommandTests.list(data)
        #expect(rows.first?["state"] as? String == "waiting")
        #expect((rows.first?["failure"] as? String)?.contains("metered") == true, "\(rows)")
        #expect(!origin.log.contains { $0.path.hasSuffix(".ts") }, "no media byte over a metered network")
        let allowed = try await run(["download", "run", "--data-dir", data, "--headroom", "0", "--download-over-cellular"])
        #expect(allowed.status == 0, "\(allowed.stderr)")

        // NetworkManager not running: the type is unknown.
        try install("#!/bin/sh\necho 'Error: NetworkManager is not running.' >&2\nexit 8\n")
        #expect(try await run(["download", "add", origin.url("asset/master.m3u8"), "--data-dir", data, "--id", "b"]).status == 0)
        // The default: an unknown network counts as metered, and the notice says what to do.
        let denied = try await run(["download", "run", "--data-dir", data, "--headroom", "0"])
        #expect(denied.status == 3 && denied.stderr.contains("cannot be detected") && denied.stderr.contains("counts as metered: nothing downloads")
                && denied.stderr.contains("--metered-unknown allow"), "\(denied.stderr)")
        rows = try await DownloadCommandTests.list(data)
        #expect((rows.first { $0["id"] as? String == "b" }?["failure"] as? String)?.contains("cannot be detected") == true, "\(rows)")
        #expect(rows.first { $0["id"] as? String == "b" }?["state"] as? String == "waiting", "\(rows)")
        let explicit = try await run(["download", "run", "--data-dir", data, "--headroom", "0", "--metered-unknown", "deny"])
        #expect(explicit.status == 3, "\(explicit.stderr)")
        let wrongSetting = try await run(["download", "run", "--data-dir", data], ["SATCHEL_METERED_UNKNOWN": "sometimes"])
        #expect(wrongSetting.status != 0 && wrongSetting.stderr.contains("SATCHEL_METERED_UNKNOWN must be allow or deny"), "\(wrongSetting.stderr)")
        let unknown = try await run(["download", "run", "--data-dir", data, "--headroom", "0", "--metered-unknown", "allow"])
        #expect(unknown.status == 0 && unknown.stderr.contains("downloading anyway"), "\(unknown.stderr)")
        #expect(try await run(["download", "add", origin.url("asset/master.m3u8"), "--data-dir", data, "--id", "b2"]).status == 0)
        let bySetting = try await run(["download", "run", "--data-dir", data, "--headroom", "0"], ["SATCHEL_METERED_UNKNOWN": "allow"])
        #expect(bySetting.status == 0 && bySetting.stderr.contains("downloading anyway"), "\(bySetting.stderr)")
        let bad = try await run(["download", "run", "--data-dir", data, "--metered-unknown", "maybe"])
        #expect(bad.status != 0 && bad.stderr.contains("metered-unknown"))

        // Back on an unmetered network: no notice.
        try install("#!/bin/sh\ncat '\(answer.path)'\n")
        try setAnswer("guessed-no.txt")
        #expect(try await run(["download", "add", origin.url("asset/master.m3u8"), "--data-dir", data, "--id", "c"]).status == 0)
        let unmetered = try await run(["download", "run", "--data-dir", data, "--headroom", "0"])
        #expect(unmetered.status == 0 && !unmetered.stderr.contains("cannot be detected"), "\(unmetered.stderr)")
        #expect(unmetered.stderr.contains("satchel: network: not metered (NetworkManager); downloading"), "\(unmetered.stderr)")
    }
}
