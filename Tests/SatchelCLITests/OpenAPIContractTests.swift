import Foundation
import SatchelTestSupport
import Testing

/// The OpenAPI document against a live `satchel serve` with every part (licenses with FairPlay credentials, devices,
/// the origin, the player, the dashboard, demo tokens), through schemathesis with a fixed seed: the document's examples,
/// boundary cases per parameter (coverage), 25 generated requests per operation (fuzzing) and stateful runs along its links, with an
/// entitlement token and a dashboard session. No answer may be a 5xx, every answer must match its documented status,
/// Content-Type, headers and schema, data that breaks the schema must be refused, and every error must be
/// problem+json (`Tests/Contract/satchel_checks.py`; a page only for a client that asks for HTML).
///
/// Not checked: `positive_data_acceptance` (that every schema-valid request succeeds) — SPCs, device requests and
/// signatures cannot be generated from a schema, so schema-valid bodies are refused with 400 as they should be.
@Suite(.serialized) struct OpenAPIContractTests {
    static let contract = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Contract")
    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/SatchelServer/Web/openapi.json")
    static let operatorKey = "operator-key-of-the-contract-test-0123456789"

    /// schemathesis on the PATH, else in the scripts folder of python3's packages (where `python3 -m pip` puts it, which
    /// pyenv's shims only learn of at their next rehash).
    static func schemathesisTool() throws -> URL? {
        if let found = TestMedia.which("schemathesis") { return found }
        let scripts = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import sysconfig; print(sysconfig.get_path('scripts'))"])
        let candidate = URL(fileURLWithPath: scripts.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).appendingPathComponent("schemathesis")
        return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
    }

    /// `METHOD /path` of every operation the document describes.
    static func operations() throws -> Set<String> {
        OpenAPIOperations.of(try JSONSerialization.jsonObject(with: Data(contentsOf: document)) as? [String: Any] ?? [:])
    }

    /// The operations a JUnit report of schemathesis names (one test case per operation).
    static func tested(junit: URL) throws -> Set<String> {
        let text = try String(contentsOf: junit, encoding: .utf8)
        return Set(text.components(separatedBy: "<testcase name=\"").dropFirst().compactMap { $0.split(separator: "\"", maxSplits: 1).first.map(String.init) })
    }

    @Test("schemathesis against a live satchel serve: no 5xx, every answer as documented, schema-breaking data refused, every error problem+json",
          .timeLimit(.minutes(10)))
    func schemathesis() async throws {
        let tool = try #require(try Self.schemathesisTool(), "schemathesis is not installed: scripts/test installs it with pip")
        let server = try await AgentCommandTests.Server("contract")
        // What the document's examples name: the asset "movie" (key ID 7c3e9a14…, imported by the server) and its
        // published manifest, so that the examples reach real answers.
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site.appendingPathComponent("movie"), withIntermediateDirectories: true)
        let manifest = site.appendingPathComponent("movie/manifest.mpd")
        try #"<?xml version="1.0"?><MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"/>"#.write(to: manifest, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: manifest.path)
        let keyFile = server.directory.appendingPathComponent("operator.key")
        try Self.operatorKey.write(to: keyFile, atomically: true, encoding: .utf8)
        let credentials = FairPlayFixtures.root.appendingPathComponent("credentials")
        server.serveArguments = ["--origin", site.path, "--operator-key-file", keyFile.path, "--demo-tokens", "backend",
                                 "--fps-certificate", credentials.appendingPathComponent("dev_certificate.der").path,
                                 "--fps-private-key", credentials.appendingPathComponent("dev_private_key.pem").path, "--fps-dask", CLIRunner.dask]
        try await server.start()
        defer { server.stop() }
        let token = try await server.token()
        let operations = try Self.operations()
        let junit = server.directory.appendingPathComponent("schemathesis-junit.xml")
        let result = try await TestMedia.offloaded { () throws -> ProcessRunner.Result in
            // A dashboard session, so that the pages and forms are reached past the login (each form's CSRF token is
            // still unknown to schemathesis: those answers are the 403 the document gives).
            // A loaded machine may answer the first sign-in slowly or not at all: a few tries, a second apart.
            let headers = server.directory.appendingPathComponent("login-headers")
            var cookie: Substring?, answer = ""
            for attempt in 0..<5 where cookie == nil {
                if attempt > 0 { Thread.sleep(forTimeInterval: 1) }
                _ = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-m", "20", "-o", "/dev/null", "-D", headers.path,
                                                                                  "--data-urlencode", "key@\(keyFile.path)", server.url + "/admin/login"])
                answer = (try? String(contentsOf: headers, encoding: .utf8)) ?? ""
                cookie = answer.split(whereSeparator: \.isNewline).first { $0.lowercased().hasPrefix("set-cookie: satchel_admin=") }
            }
            let session = try #require(cookie?.split(separator: "=", maxSplits: 1).last?.split(separator: ";").first.map(String.init),
                                       "signed in; the last answer: \(answer.split(whereSeparator: \.isNewline).first ?? "none")")
            let configuration = server.directory.appendingPathComponent("schemathesis.toml")
            try """
                [auth.openapi.entitlement]
                bearer = "${SATCHEL_CONTRACT_TOKEN}"
                [auth.openapi.operatorSession]
                api_key = "${SATCHEL_CONTRACT_SESSION}"
                [auth.openapi.operatorKey]
                bearer = "${SATCHEL_CONTRACT_OPERATOR_KEY}"
                # More stateful scenarios than the other phases' examples: they are quick, and with 70 operations
                # 25 could miss every link (the document's links then go untested).
                [phases.stateful]
                generation.max-examples = 150

                """.write(to: configuration, atomically: true, encoding: .utf8)
            return try ProcessRunner.run(tool, ["--config-file", configuration.path, "run", server.url + "/openapi.json",
                                                "--max-examples", "25", "--seed", "1", "--no-color", "--generation-database", "none",
                                                "--max-redirects", "0", "--request-timeout", "20", "--exclude-checks", "positive_data_acceptance",
                                                "--report", "junit", "--report-junit-path", junit.path],
                                         environment: ["SATCHEL_CONTRACT_TOKEN": token, "SATCHEL_CONTRACT_SESSION": session, "SATCHEL_CONTRACT_OPERATOR_KEY": Self.operatorKey,
                                                       "PYTHONPATH": Self.contract.path, "SCHEMATHESIS_HOOKS": "satchel_checks"],
                                         directory: server.directory)
        }
        let report = result.stdout
        #expect(result.status == 0, "schemathesis found failures:\n\(report.suffix(6000))\n\(result.stderr.suffix(2000))")
        // schemathesis leaves out the address it loaded the document from (OpenAPIDocumentTests serves it); its stateful
        // runs are one more test case.
        var tested = try Self.tested(junit: junit)
        #expect(tested.remove("Stateful tests") != nil, "the stateful phase ran")
        let expected = operations.subtracting(["GET /openapi.json"])
        #expect(tested == expected, "every documented operation is tested: untested \(expected.subtracting(tested).sorted()), unknown \(tested.subtracting(expected).sorted())")
        for phase in ["Examples", "Coverage", "Fuzzing", "Stateful"] {
            #expect(report.contains("✅  \(phase)"), "the \(phase) phase ran and passed")
        }
        // The document's links are there for the stateful phase (how many of them its random runs reach varies with the
        // machine's load: from none to a few, so that count is reported, not required).
        let links = report.split(separator: "\n").filter { $0.contains("API Links") || $0.contains("Stateful") }
        #expect(report.contains("API Links:") && !report.contains("/ 0 selected"), "the stateful phase had the document's links: \(links)")
        #expect(!report.contains(token), "the token is never printed")
        let health = try await TestMedia.offloaded { try OriginCommandTests.request(server.url + "/health") }
        #expect(health.status == 200, "the server is still up")
    }
}
