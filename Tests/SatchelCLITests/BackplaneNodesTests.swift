import Crypto
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SatchelBytes
import SatchelRights
import SatchelTestSupport
import Testing

/// Two `satchel serve` nodes on one real PostgreSQL (issue "The backplane", scale-out): the limits are invariants of
/// the database whatever the interleaving of requests over the nodes, and a command issued on one node reaches a device
/// streaming from the other (PostgreSQL `LISTEN/NOTIFY`).
@Suite(.serialized) struct BackplaneNodesTests {
    /// A fresh database for this suite: scripts/test makes it anew for every run.
    static func databaseURL() throws -> String {
        try #require(ProcessInfo.processInfo.environment["SATCHEL_NODES_DATABASE_URL"],
                     "PostgreSQL is required: set SATCHEL_NODES_DATABASE_URL to a new database, or run scripts/test, which makes one")
    }

    /// `psql` on `url`: the first column of the answer's first row.
    static func sql(_ url: String, _ statement: String) throws -> String {
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["psql", url, "-tAc", statement])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Requests in flight at once: enough to race over both nodes, few enough that the tests beside this one are not
    /// starved (the nodes run at the lowest priority too).
    static let inFlight = 8

    /// A POST of JSON; the status and the body.
    static func post(_ url: String, _ body: some Encodable, bearer: String? = nil) async throws -> (status: Int, body: Data) {
        var request = URLRequest(url: try #require(URL(string: url)))
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
        request.httpBody = try JSONCoding.encoder().encode(body)
        request.timeoutInterval = 60
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, data)
    }

    /// 200 signed requests to `path` (8 in flight, alternately through each node), each from the next of `devices`, for
    /// the asset `asset(index)`: how many answered granted (every one answers 200).
    static func granted(_ nodes: [String], _ path: String, _ devices: [(P256.Signing.PrivateKey, String)],
                        asset: @escaping @Sendable (Int) -> String) async throws -> Int {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            var count = 0
            for index in 0..<200 {
                if index >= Self.inFlight, try await group.next() == true { count += 1 }
                let (deviceKey, certificate) = devices[index % devices.count]
                group.addTask {
                    let claims = DeviceRequestClaims(certificate: certificate, assetID: asset(index), nonce: Hex.encode(SecureRandom.bytes(16)), time: Date(),
                                                     route: "POST " + path)
                    let answer = try await Self.post(nodes[index % 2] + path, DeviceRequestEnvelope(request: try SignedToken.sign(claims, key: deviceKey)))
                    #expect(answer.status == 200, "\(String(decoding: answer.body, as: UTF8.self))")
                    return (try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any])?["granted"] as? Bool == true
                }
            }
            for try await answer in group where answer { count += 1 }
            return count
        }
    }

    @Test("two nodes: 200 registrations, 200 permission requests and 200 stream slot requests (8 at a time) for one user, spread over both, end at the limits exactly (counted in the database); a wipe issued on node A, and an item added there to a feed it follows, reach an agent streaming from node B",
          .timeLimit(.minutes(5)))
    func twoNodes() async throws {
        let url = try Self.databaseURL()
        let first = try await AgentCommandTests.Server("nodes-a"), second = try await AgentCommandTests.Server("nodes-b")
        let key = first.directory.appendingPathComponent("operator.key").path, kek = first.directory.appendingPathComponent("kek.key").path
        try (Base64URL.encode(SecureRandom.bytes(32)) + "\n").write(toFile: key, atomically: true, encoding: .utf8)
        try (Hex.encode(SecureRandom.bytes(32)) + "\n").write(toFile: kek, atomically: true, encoding: .utf8)
        for server in [first, second] {
            server.serveArguments = ["--database-url", url, "--kek-file", kek, "--operator-key-file", key]
            server.lowPriority = true
            try await server.start()  // one after the other: the first migrates the database
        }
        defer { first.stop(); second.stop() }
        let operatorArguments: @Sendable (AgentCommandTests.Server) -> [String] = { ["--server", $0.url, "--operator-key-file", key] }
        // Blocking calls (processes) off the cooperative pool: the suites beside this one share its two threads.
        let limited = try await TestMedia.offloaded {
            try CLIRunner.run(["backplane", "limits", "set", "--user", "crowd", "--max-devices", "5", "--max-downloads", "9", "--max-streams", "4"] + operatorArguments(first))
        }
        #expect(limited.status == 0, "\(limited.stderr)")

        // 200 registrations at once, alternately through each node.
        let token = try await TestMedia.offloaded { try first.token(subject: "crowd") }
        let nodes = [first.url, second.url]
        let registered = try await withThrowingTaskGroup(of: (P256.Signing.PrivateKey, RegistrationAnswer?).self) { group in
            var all: [(P256.Signing.PrivateKey, RegistrationAnswer?)] = []
            for index in 0..<200 {
                if index >= Self.inFlight, let item = try await group.next() { all.append(item) }
                group.addTask {
                    let key = P256.Signing.PrivateKey()
                    let answer = try await Self.post(nodes[index % 2] + "/devices", RegistrationRequest(publicKey: PublicKeyJWK(key.publicKey), name: "d\(index)",
                                                                                                         externalID: nil), bearer: token)
                    return (key, answer.status == 201 ? try JSONCoding.decoder().decode(RegistrationAnswer.self, from: answer.body) : nil)
                }
            }
            for try await item in group { all.append(item) }
            return all
        }
        #expect(registered.allSatisfy { $0.1 != nil }, "every registration answered 201")
        #expect(registered.filter { $0.1?.downloadEnabled == true }.count == 5, "five enabled, the rest told device-limit-reached")
        #expect(registered.filter { $0.1?.notice == "device-limit-reached" }.count == 195)
        let counted = try await TestMedia.offloaded {
            (try Self.sql(url, "SELECT count(*) FROM backplane_devices WHERE user_id = 'crowd'"),
             try Self.sql(url, "SELECT count(*) FROM backplane_devices WHERE user_id = 'crowd' AND download_enabled"))
        }
        #expect(counted.0 == "200" && counted.1 == "5", "\(counted)")

        // 200 permission requests at once (distinct assets, the five enabled devices, both nodes): nine grants.
        let enabled = registered.compactMap { item in item.1.flatMap { $0.downloadEnabled == true ? (item.0, $0.certificate) : nil } }
        let granted = try await Self.granted(nodes, "/backplane/permissions", enabled) { "asset-\($0)" }
        #expect(granted == 9, "the account's nine downloads, no more")
        #expect(try await TestMedia.offloaded { try Self.sql(url, "SELECT count(*) FROM backplane_grants WHERE user_id = 'crowd'") } == "9")

        // 200 stream slot requests at once (every device of the account, both nodes): four slots.
        let devices = registered.compactMap { item in item.1.map { (item.0, $0.certificate) } }
        let slots = try await Self.granted(nodes, "/backplane/slots", devices) { _ in "live" }
        #expect(slots == 4, "the account's four streams, no more")
        #expect(try await TestMedia.offloaded { try Self.sql(url, "SELECT count(*) FROM backplane_slots WHERE user_id = 'crowd'") } == "4")

        // An agent streaming from node B; the wipe issued on node A.
        let device = second.directory.appendingPathComponent("device").path
        let register = try await TestMedia.offloaded {
            try CLIRunner.run(["agent", "register", "--server", second.url, "--token", try second.token(subject: "viewer"), "--data-dir", device])
        }
        #expect(register.status == 0, "\(register.stderr)")
        let id = register.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let listener = try LineReader(["agent", "listen", "--data-dir", device])
        defer { listener.stop() }
        try await TestMedia.offloaded {
            #expect(listener.wait(for: "listening: connected", seconds: 20), "\(listener.lines)")
            // A feed made on node A, followed through node B; an item added on node A reaches the listening device.
            #expect(try CLIRunner.run(["backplane", "feeds", "create", "news", "--title", "News"] + operatorArguments(first)).status == 0)
            let subscribed = try CLIRunner.run(["agent", "subscribe", "news", "--data-dir", device])
            #expect(subscribed.status == 0, "\(subscribed.stderr)")
            #expect(try CLIRunner.run(["backplane", "feeds", "add-item", "news", "--asset-id", "announced"] + operatorArguments(first)).status == 0)
            #expect(listener.wait(for: "subscription: skipped announced", seconds: 5), "the item crossed from node A to node B: \(listener.lines)")
            let wiped = try CLIRunner.run(["backplane", "devices", "wipe", id] + operatorArguments(first))
            #expect(wiped.status == 0, "\(wiped.stderr)")
            #expect(listener.wait(for: "applied 1: wipe", seconds: 5), "the wipe crossed from node A to node B: \(listener.lines)")
        }
    }
}
