import Foundation
import SatchelTestSupport
import Testing

/// Seed 000 §5.7 "Logging": the agent's license log lines — acquire, renew, release, and the secure clock going back
/// and being confirmed — each with its asset and license, none with the token.
@Suite(.serialized) struct LicenseLogTests {
    @Test("seed 000 §5.7: with --log-level info the agent logs \"license acquired\", \"license renewed\" and \"license released\" with the asset and the license ID, a rollback of the clock (\"the device clock went back\") and the server's time confirming it; never the token")
    func licenseLogLines() async throws {
        let server = try await AgentCommandTests.Server("license-log")
        try await server.start()
        defer { server.stop() }
        let device = server.directory.appendingPathComponent("device").path
        let token = try await server.token()
        // The log goes to a file of this test's own (with a log file, standard error stays the command's own).
        let log = server.directory.appendingPathComponent("agent.log")
        let info = ["--data-dir", device, "--log-level", "info", "--log-file", log.path]
        let (acquired, renewed, licenseID) = try await TestMedia.offloaded { () throws -> (CLIRunner.Result, CLIRunner.Result, String) in
            #expect(try AgentCommandTests.satchel(["agent", "register", "--server", server.url, "--token", token] + info).status == 0)
            let acquired = try AgentCommandTests.satchel(["license", "acquire", "movie", "--token", token, "--persistent"] + info)
            let listed = try JSONSerialization.jsonObject(with: Data(try AgentCommandTests.satchel(["license", "list", "--data-dir", device, "--json"]).stdout.utf8))
            let licenseID = try #require((listed as? [[String: Any]])?.first?["licenseID"] as? String, "\(listed)")
            let renewed = try AgentCommandTests.satchel(["license", "renew", "movie", "--token", token] + info)
            return (acquired, renewed, licenseID)
        }
        // Back two days, the server out of reach: the rollback is logged; with the server back, its time confirms the clock.
        server.stop()
        let back = try await TestMedia.offloaded { try AgentCommandTests.satchel(["rights", "movie"] + info, faketime: "-2d") }
        try await server.start()
        let (confirmed, released) = try await TestMedia.offloaded { () throws -> (CLIRunner.Result, CLIRunner.Result) in
            (try AgentCommandTests.satchel(["rights", "movie"] + info), try AgentCommandTests.satchel(["license", "release", "movie"] + info))
        }
        let text = try String(contentsOf: log, encoding: .utf8)
        for line in ["license acquired", "license renewed", "license released"] {
            let logged = text.split(separator: "\n").first { $0.contains(line) }.map(String.init) ?? ""
            #expect(logged.contains("movie") && logged.contains(licenseID), "\(line): \(text.suffix(2000))")
        }
        #expect(text.contains("the device clock went back") && text.contains("the server's time confirmed the device clock"), "\(text.suffix(2000))")
        #expect(!text.contains(token))
        for result in [acquired, renewed, back, confirmed, released] { #expect(!result.stderr.contains(token) && !result.stdout.contains(token)) }
    }
}
