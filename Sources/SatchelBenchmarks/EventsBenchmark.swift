import AsyncHTTPClient
import Foundation
import SatchelBackplane
import SatchelBytes
import SatchelRights
import SatchelSystem

/// Event ingestion (issue "Subscriptions, events and stream slots"): `POST /backplane/events` under wrk, batches of
/// 100 events, each request signed beforehand with its own nonce and the digest of its batch; on one node with
/// SQLite and two nodes with PostgreSQL, in one run. An event counts once the node answered 200 (its batch
/// committed); the store's own count afterwards checks that every one was kept.
struct EventsBenchmark {
    let seconds: Int
    let batch = 100
    /// Bodies signed per node: enough for well over the target rate for the whole run (a body sent twice is a replay).
    var bodiesPerNode: Int { max(1_000, 600 * seconds) }

    func run() async throws {
        let backplane = BackplaneBenchmark(seconds: seconds)
        guard Tool.output(["which", "wrk"]) != nil else {
            print("events benchmark skipped: wrk is not installed (apt-get install wrk)")
            return
        }
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("satchel-events-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        print("Events: batches of \(batch) under wrk (\(seconds) s, 32 connections in all); target ≥ 20,000 events/s on one node (no peer: Penthera's backplane is closed)")
        let one = try await scenario(backplane, nodes: [try backplane.start(root.appendingPathComponent("sqlite").path, url: nil)], root: root, label: "sqlite")
        report("1 node, SQLite", one)
        guard let url = ProcessInfo.processInfo.environment["SATCHEL_BENCH_DATABASE_URL"] else {
            print("two nodes skipped: set SATCHEL_BENCH_DATABASE_URL to a PostgreSQL database the benchmark may empty")
            return
        }
        guard Tool.output(["psql", url, "-qc", "DROP SCHEMA public CASCADE; CREATE SCHEMA public"]) != nil else {
            print("two nodes skipped: psql cannot empty \(URLComponents(string: url)?.path ?? "the database")")
            return
        }
        let first = try backplane.start(root.appendingPathComponent("pg-a").path, url: url)
        let second = try backplane.start(root.appendingPathComponent("pg-b").path, url: url)
        report("2 nodes, PostgreSQL", try await scenario(backplane, nodes: [first, second], root: root, label: "postgres"))
    }

    struct Result {
        var eventsPerSecond: Double
        var kept: Int
        var accepted: Int
        var refused: Int
    }

    func report(_ label: String, _ result: Result) {
        print(String(format: "%-22@ %8.0f events/s accepted and kept   (%d batches refused; %d events accepted, %d in the store)",
                     label as NSString, result.eventsPerSecond, result.refused, result.accepted, result.kept))
    }

    func scenario(_ backplane: BackplaneBenchmark, nodes: [BackplaneBenchmark.Node], root: URL, label: String) async throws -> Result {
        defer { for node in nodes { node.child.signal(SIGTERM); _ = node.child.waitBlocking() } }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let devices: [BackplaneBenchmark.Device]
        do { devices = try await backplane.register(on: nodes[0], client) } catch {
            try? await client.shutdown()
            throw error
        }
        var scripts: [String] = []
        for index in nodes.indices {
            let file = root.appendingPathComponent("\(label)-bodies-\(index).txt")
            var text = ""
            for request in 0..<bodiesPerNode { text += try body(devices[(request * nodes.count + index) % devices.count]) + "\n" }
            try text.write(to: file, atomically: true, encoding: .utf8)
            let script = root.appendingPathComponent("\(label)-events-\(index).lua")
            try """
                local bodies = {}
                for line in io.lines("\(file.path)") do bodies[#bodies + 1] = line end
                local next = 0
                request = function()
                  next = next + 1
                  if next > #bodies then next = 1 end
                  return wrk.format("POST", "/backplane/events", { ["Content-Type"] = "application/json" }, bodies[next])
                end
                """.write(to: script, atomically: true, encoding: .utf8)
            scripts.append(script.path)
        }
        let outputs = try await withThrowingTaskGroup(of: String.self) { group in
            for (index, node) in nodes.enumerated() {
                let (script, url, connections, seconds) = (scripts[index], node.url, 32 / nodes.count, seconds)
                group.addTask { Tool.output(["wrk", "-t1", "-c\(connections)", "-d\(seconds)s", "-s", script, url + "/backplane/events"]) ?? "" }
            }
            var all: [String] = []
            for try await output in group { all.append(output) }
            return all
        }
        var good = 0.0, bad = 0.0
        for output in outputs {
            let requests = BackplaneBenchmark.number(after: "requests in", before: true, output) ?? 0
            let refused = BackplaneBenchmark.number(after: "Non-2xx or 3xx responses:", before: false, output) ?? 0
            good += requests - refused
            bad += refused
        }
        let kept = try await storedEvents(nodes[0], client, operatorKey: backplane.operatorKey)
        try? await client.shutdown()
        return Result(eventsPerSecond: good * Double(batch) / Double(seconds), kept: kept, accepted: Int(good) * batch, refused: Int(bad))
    }

    /// One request's body: a batch of fresh events, signed by `device` with its own nonce and the batch's digest.
    func body(_ device: BackplaneBenchmark.Device) throws -> String {
        let now = Date()
        let events = (0..<batch).map { index in
            DeviceEvent(kind: index % 10 == 0 ? .downloadCompleted : .playStop, time: now, assetID: "asset-\(index % 17)", seconds: Double(index))
        }
        let text = String(decoding: try JSONCoding.encoder().encode(events), as: UTF8.self)
        let claims = DeviceRequestClaims(certificate: device.certificate, nonce: Hex.encode(SecureRandom.bytes(16)), time: now,
                                         bodyDigest: DeviceRequestClaims.digest(of: text), route: "POST /backplane/events")
        let envelope = DeviceBodyEnvelope(request: try SignedToken.sign(claims, key: device.key), body: text)
        return String(decoding: try JSONCoding.encoder().encode(envelope), as: UTF8.self)
    }

    /// The events the store holds, by the operator API's counts.
    func storedEvents(_ node: BackplaneBenchmark.Node, _ client: HTTPClient, operatorKey: String) async throws -> Int {
        var request = HTTPClientRequest(url: node.url + "/backplane/operator/events/counts?by=kind")
        request.headers.add(name: "Authorization", value: "Bearer \(operatorKey)")
        let response = try await client.execute(request, timeout: .seconds(120))
        let body = try await response.body.collect(upTo: 1 << 20)
        struct Counts: Decodable { var counts: [EventCount] }
        return try JSONCoding.decoder().decode(Counts.self, from: Data(body.readableBytesView)).counts.reduce(0) { $0 + $1.count }
    }
}
