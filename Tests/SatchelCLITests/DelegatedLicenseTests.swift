import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SatchelAgent
import SatchelBytes
import SatchelTestSupport
import Testing

/// Seed 000 §5.3.3b, delegated license acquisition: the app takes the license challenge, sends it its own way (here
/// curl, as an app's own backend would) and hands back the answer to be installed.
@Suite struct DelegatedLicenseTests {
    typealias Server = AgentCommandTests.Server

    @Test("license challenge → sent by curl with the user's token → license install, offline: installed once, never on another device, never tampered, and read from standard input too")
    func challengeAndInstall() async throws {
        try TestMedia.require("curl")
        let server = try await Server("delegated")
        try await server.start()
        defer { server.stop() }
        let token = try await server.token()
        let device = server.directory.appendingPathComponent("device").path
        let other = server.directory.appendingPathComponent("other").path
        let work = server.directory.appendingPathComponent("answers")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)

        let answers = try await TestMedia.offloaded { () throws -> [URL] in
            for directory in [device, other] {
                #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", directory]).status == 0)
            }
            // Four challenges: three of this device's, one of the other's.
            return try (0..<4).map { index in
                let made = try CLIRunner.run(["license", "challenge", "movie", "--persistent", "--data-dir", index == 3 ? other : device])
                #expect(made.status == 0, "\(made.stderr)")
                let challenge = try AgentCommandTests.json(made.stdout)
                let url = try #require(challenge["url"] as? String), body = try #require(challenge["body"] as? String)
                #expect(url == server.url + "/licenses" && challenge["assetID"] as? String == "movie" && challenge["persistent"] as? Bool == true)
                #expect(!made.stdout.contains(token), "the challenge carries no token: the app adds its own")
                let bodyFile = work.appendingPathComponent("body-\(index).json"), answer = work.appendingPathComponent("answer-\(index).json")
                try body.write(to: bodyFile, atomically: true, encoding: .utf8)
                // The token in a header file, as docs/device-agent.md sends it: never on a command line.
                let auth = work.appendingPathComponent("auth-\(index).txt")
                try "Authorization: Bearer \(token)\n".write(to: auth, atomically: true, encoding: .utf8)
                let status = try TestMedia.run("curl", ["-s", "-o", answer.path, "-w", "%{http_code}", "-H", "@" + auth.path,
                                                        "-H", "Content-Type: application/json", "--data-binary", "@" + bodyFile.path, url])
                #expect(status == "200", "the license server answered the app's own request")
                return answer
            }
        }
        server.stop()  // installing needs no license server: the answer came the app's way

        try await TestMedia.offloaded {
            let installed = try CLIRunner.run(["license", "install", answers[0].path, "--data-dir", device])
            #expect(installed.status == 0 && installed.stdout.contains("for movie: valid, persistent"), "\(installed.stdout) \(installed.stderr)")
            let rights = try AgentCommandTests.json(try CLIRunner.run(["rights", "movie", "--data-dir", device, "--json"]).stdout)
            #expect(rights["status"] as? String == "valid" && rights["persistent"] as? Bool == true)

            let twice = try CLIRunner.run(["license", "install", answers[0].path, "--data-dir", device])
            #expect(twice.status != 0 && twice.stderr.contains("answers no challenge this device is waiting on"), "\(twice.stderr)")
            let elsewhere = try CLIRunner.run(["license", "install", answers[3].path, "--data-dir", device])
            #expect(elsewhere.status != 0 && elsewhere.stderr.contains("answers no challenge"), "another device's answer: \(elsewhere.stderr)")
            let mine = try CLIRunner.run(["license", "install", answers[1].path, "--data-dir", other])
            #expect(mine.status != 0, "this device's answer on the other: \(mine.stderr)")

            // A changed answer is refused (the server's signature), and its challenge is spent.
            var text = try String(contentsOf: answers[2], encoding: .utf8)
            // A character inside the signature (its last one carries bits a decoder may ignore).
            let dot = try #require(text.range(of: ".", options: .backwards))
            let inside = text.index(dot.upperBound, offsetBy: 20)
            text.replaceSubrange(inside...inside, with: text[inside] == "A" ? "B" : "A")
            let tampered = work.appendingPathComponent("tampered.json")
            try text.write(to: tampered, atomically: true, encoding: .utf8)
            let refused = try CLIRunner.run(["license", "install", tampered.path, "--data-dir", device])
            #expect(refused.status != 0, "\(refused.stderr)")
            #expect(try CLIRunner.run(["license", "install", answers[2].path, "--data-dir", device]).status != 0, "its challenge is spent")
            let garbage = try CLIRunner.run(["license", "install", server.directory.appendingPathComponent("jwks.json").path, "--data-dir", device])
            #expect(garbage.status != 0 && garbage.stderr.contains("license"), "\(garbage.stderr)")

            // Standard input: the other device's own answer.
            let binary = try #require(CLIRunner.binary)
            let piped = try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"),
                                              ["-c", "\"$0\" license install - --data-dir \"$1\" < \"$2\"", binary.path, other, answers[3].path])
            #expect(piped.status == 0 && piped.stdout.contains("for movie: valid, persistent"), "\(piped.stdout) \(piped.stderr)")
        }
    }
}

/// The same through the SDK's protocol: the app's own sender (here URLSession with the token in its header).
@Suite struct DelegatedLicenseSDKTests {
    struct SessionSender: LicenseChallengeSending {
        let token: String
        let sent = Locked(0)

        func send(_ challenge: LicenseChallenge) async throws -> Data {
            var request = URLRequest(url: try #require(URL(string: challenge.url)))
            request.httpMethod = "POST"
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(challenge.body.utf8)
            let (body, _) = try await URLSession.shared.data(for: request)
            sent.withLock { $0 += 1 }
            return body
        }
    }

    @Test("agent.delegated.acquire(asset:via:) hands the challenge to the app's sender and installs its answer")
    func sender() async throws {
        let server = try await DelegatedLicenseTests.Server("delegated-sdk")
        try await server.start()
        defer { server.stop() }
        let token = try await server.token()
        let directory = server.directory.appendingPathComponent("device").path
        let agent = try await Agent(dataDirectory: directory)
        _ = try await agent.register(server: server.url, token: token)
        let sender = SessionSender(token: token)
        let license = try await agent.delegated.acquire(asset: "movie", persistent: true, via: sender)
        #expect(license.assetID == "movie" && license.persistent && sender.sent.current == 1)
        #expect(try await agent.rights(asset: "movie").status == .valid)
        let wrong = SessionSender(token: "not-a-token")
        await #expect(throws: (any Error).self) { try await agent.delegated.acquire(asset: "movie", via: wrong) }
        await agent.close()
    }
}
