import Foundation
import SatchelTestSupport
import Testing

/// The audit is the operator's record of who got which key: `satchel serve` answers a license only once
/// its record is durable (in the audit journal beside the SQLite store). Five times, under `wrk`, the server is
/// killed with SIGKILL; once the store is opened again (the journal's records folded in), every license a client
/// received has its row, and the journal is empty.
@Suite("satchel serve: no license without its audit record")
struct AuditDurabilityTests {
    static let keyID = "0123456789abcdef0123456789abcdef"

    /// `wrk`'s completed requests less its non-2xx answers: the licenses clients received.
    static func delivered(_ output: String) -> Int? {
        func number(after label: String, in line: Substring) -> Int? {
            line.components(separatedBy: label).first.flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
        }
        guard let requests = output.split(separator: "\n").first(where: { $0.contains(" requests in ") })
            .flatMap({ Int($0.trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "") }) else { return nil }
        let failures = output.split(separator: "\n").first { $0.contains("Non-2xx or 3xx responses:") }
            .flatMap { Int($0.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "") } ?? 0
        return requests - failures
    }

    @Test("kill -9 under load, five rounds: audit rows >= licenses delivered", .timeLimit(.minutes(3)))
    func killUnderLoad() async throws {
        // Minutes of waiting on processes: off the cooperative pool, which the other suites' servers need.
        try await TestMedia.offloaded { try Self.killRounds() }
    }

    static func killRounds() throws {
        let wrk = try #require(TestMedia.which("wrk"), "wrk is required for this test (apt-get install wrk)")
        let binary = try #require(CLIRunner.binary, "the satchel binary was not built")
        let nice = try #require(TestMedia.which("nice"), "nice (coreutils) is required")
        let input = try TestMedia.make("cli-audit", seconds: 2)
        let dir = try TestMedia.temporaryDirectory("cli-audit")
        let data = dir.appendingPathComponent("data").path
        let packaged = try CLIRunner.run(["package", input.path, "--out", dir.appendingPathComponent("pkg").path, "--format", "cmaf",
                                          "--scheme", "cenc", "--key-id", keyID, "--key", "00112233445566778899aabbccddeeff",
                                          "--register", "--asset-id", "film", "--data-dir", data])
        #expect(packaged.status == 0, "\(packaged.stderr)")
        // `package --register` prints the key ID in base64url too, as Clear Key requests name it.
        let kid = try #require(packaged.stdout.components(separatedBy: "(base64url ").dropFirst().first?.prefix { $0 != ")" })
        let script = dir.appendingPathComponent("clearkey.lua")
        try """
            wrk.method = "POST"
            wrk.body = '{"kids":["\(kid)"],"type":"temporary"}'
            wrk.headers["Content-Type"] = "application/json"
            """.write(to: script, atomically: true, encoding: .utf8)
        var deliveredTotal = 0
        for round in 1...5 {
            // Server and load at the lowest priority (nice execs the program: the PID is the server's), so the
            // tests running beside this one keep their share of the two cores.
            let server = Process()
            server.executableURL = nice
            server.arguments = ["-n", "19", binary.path, "serve", "--data-dir", data, "--port", "0", "--insecure-no-entitlement"]
            let listening = Pipe()
            server.standardOutput = listening
            server.standardError = FileHandle.nullDevice
            try server.run()
            // A port of the system's choice each round: one freed by the last round may be a client's by now.
            let port = try #require(ListeningLine.port(from: listening), "round \(round): the server did not start")
            let load = Process()
            load.executableURL = nice
            load.arguments = ["-n", "19", wrk.path, "-t2", "-c32", "-d3s", "-s", script.path, "http://127.0.0.1:\(port)/clearkey/license"]
            let output = Pipe()
            load.standardOutput = output
            load.standardError = FileHandle.nullDevice
            try load.run()
            Thread.sleep(forTimeInterval: 1 + Double.random(in: 0..<1))
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            load.waitUntilExit()
            let delivered = try #require(Self.delivered(text), "cannot read wrk's output: \(text)")
            // A round on a loaded machine may be killed before its first answer (the server runs at nice 19);
            // the rounds together must deliver some.
            deliveredTotal += delivered
        }
        #expect(deliveredTotal > 0, "no license was delivered in five rounds")
        // The next process to open the store folds what the killed servers left in the journal; then the audit rows
        // are counted (the store is read directly).
        let listed = try CLIRunner.run(["keys", "list", "--data-dir", data])
        #expect(listed.status == 0, "\(listed.stderr)")
        let rows = try Self.auditRows(data)
        #expect(rows >= deliveredTotal, "\(deliveredTotal) licenses delivered, \(rows) audit rows")
        for journal in ["audit-0.journal", "audit-1.journal"] {
            let size = try FileManager.default.attributesOfItem(atPath: data + "/" + journal)[.size] as? Int
            #expect(size == 0, "\(journal) still holds \(size ?? -1) bytes after the store was opened and closed")
        }
    }

    /// The number of Clear Key licenses in the audit table of `data/satchel-audit.sqlite` (the audit's own file).
    static func auditRows(_ data: String) throws -> Int {
        let python = """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            print(db.execute("select count(*) from satchel_licenses where type like 'clearkey%'").fetchone()[0])
            """
        let python3 = try #require(TestMedia.which("python3"), "python3 is required")
        let result = try ProcessRunner.run(python3, ["-c", python, data + "/satchel-audit.sqlite"])
        return try #require(Int(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)), "\(result.stderr)")
    }
}
