import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import SatchelBackplane
import SatchelBytes
import SatchelRights
import SatchelSystem

/// The backplane under load (issue "The backplane"): sync requests per second (wrk, requests signed beforehand, each
/// with its own nonce), and push latency — a wipe issued through the operator API until the device's event stream
/// shows it — with 1,000 devices connected; on one node with SQLite and on two nodes with PostgreSQL (commands
/// issued on the first node, devices streaming from the second: LISTEN/NOTIFY between them), in one run. Each node is
/// a process of its own (`backplane-node`); its memory per connected device is read from /proc.
struct BackplaneBenchmark {
    let seconds: Int
    let devices = 1000
    let commands = 200
    let operatorKey = Base64URL.encode(SecureRandom.bytes(32))
    let kek = Hex.encode(SecureRandom.bytes(32))

    struct Node {
        let child: ChildProcess
        let port: Int
        var quota: CPUQuota? = nil
        var url: String { "http://127.0.0.1:\(port)" }
    }

    struct Device: Sendable {
        let key: P256.Signing.PrivateKey
        let id: String
        let certificate: String

        /// A fresh signed request for `route` (`GET /backplane/sync`).
        func signed(_ route: String) throws -> String {
            try SignedToken.sign(DeviceRequestClaims(certificate: certificate, nonce: Hex.encode(SecureRandom.bytes(16)), time: Date(), route: route), key: key)
        }
    }

    struct Result {
        var syncRate: Double
        var p50: Double, p99: Double, received: Int
        var kilobytesPerDevice: Double
    }

    func run() async throws {
        guard Tool.output(["which", "wrk"]) != nil else {
            print("backplane benchmark skipped: wrk is not installed (apt-get install wrk)")
            return
        }
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("satchel-backplane-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        print("Backplane: \(devices) devices; sync under wrk (\(seconds) s, 64 connections in all); push: \(commands) wipes, each timed from the operator's request to the device's event")
        let one = try await scenario(nodes: [try start(root.appendingPathComponent("sqlite").path, url: nil)], root: root, label: "sqlite")
        report("1 node, SQLite", one)
        guard let url = ProcessInfo.processInfo.environment["SATCHEL_BENCH_DATABASE_URL"] else {
            print("two nodes skipped: set SATCHEL_BENCH_DATABASE_URL to a PostgreSQL database the benchmark may empty")
            return
        }
        let empty = { Tool.output(["psql", url, "-qc", "DROP SCHEMA public CASCADE; CREATE SCHEMA public"]) != nil }
        guard empty() else {
            print("two nodes skipped: psql cannot empty \(URLComponents(string: url)?.path ?? "the database")")
            return
        }
        let single = try await scenario(nodes: [try start(root.appendingPathComponent("pg-one").path, url: url)], root: root, label: "postgres-one")
        report("1 node, PostgreSQL", single)
        guard empty() else { throw BenchmarkError(message: "psql cannot empty the database again") }
        let first = try start(root.appendingPathComponent("pg-a").path, url: url)
        let second = try start(root.appendingPathComponent("pg-b").path, url: url)
        let two = try await scenario(nodes: [first, second], root: root, label: "postgres")
        report("2 nodes, PostgreSQL", two)
        print(String(format: "two nodes / one node, sync: %.2f× SQLite's, %.2f× PostgreSQL's (the nodes, wrk and PostgreSQL share this machine's %d cores)",
                     two.syncRate / max(one.syncRate, 1), two.syncRate / max(single.syncRate, 1), ProcessInfo.processInfo.activeProcessorCount))
        // Scale-out: each node held to half a core, as a node of its own machine would be (one node already fills this one).
        guard empty() else { throw BenchmarkError(message: "psql cannot empty the database again") }
        let limited = try start(root.appendingPathComponent("pg-q").path, url: url, cores: 0.5)
        guard limited.quota != nil else {
            limited.child.signal(SIGTERM)
            _ = limited.child.waitBlocking()
            print("scale-out rows skipped: no writable cgroup CPU controller (run as root)")
            return
        }
        let singleLimited = try await scenario(nodes: [limited], root: root, label: "postgres-q1")
        report("1 node, ½ core, PG", singleLimited)
        guard empty() else { throw BenchmarkError(message: "psql cannot empty the database again") }
        let pair = [try start(root.appendingPathComponent("pg-qa").path, url: url, cores: 0.5), try start(root.appendingPathComponent("pg-qb").path, url: url, cores: 0.5)]
        let twoLimited = try await scenario(nodes: pair, root: root, label: "postgres-q2")
        report("2 nodes, ½ core each", twoLimited)
        print(String(format: "scale-out, each node held to half a core (cgroup quota): two nodes / one node, sync %.2f× (target ≥ 1.6×)",
                     twoLimited.syncRate / max(singleLimited.syncRate, 1)))
    }

    func report(_ label: String, _ result: Result) {
        print(String(format: "%-22@ sync %7.0f /s   push p50 %6.1f ms  p99 %6.1f ms (%d of %d received; target p99 < 250 ms)   %5.1f KB per connected device",
                     label as NSString, result.syncRate, result.p50, result.p99, result.received, commands, result.kilobytesPerDevice))
    }

    /// Starts a node (under a CPU quota of `cores` when given and the machine allows it); waits for its `ready PORT`.
    func start(_ directory: String, url: String?, cores: Double? = nil) throws -> Node {
        let pipe = Pipe()
        let child = try ChildProcess.spawn(CommandLine.arguments[0], ["backplane-node", directory, kek, operatorKey] + (url.map { [$0] } ?? []),
                                           output: pipe.fileHandleForWriting.fileDescriptor)
        try? pipe.fileHandleForWriting.close()
        var line = [UInt8]()
        while let byte = try pipe.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") { line.append(byte) }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("ready "), let port = Int(text.dropFirst(6)) else { throw BenchmarkError(message: "a backplane node did not start: \(text)") }
        return Node(child: child, port: port, quota: cores.flatMap { CPUQuota.make(pid: child.pid, cores: $0) })
    }

    func scenario(nodes: [Node], root: URL, label: String) async throws -> Result {
        defer {
            for node in nodes {
                node.child.signal(SIGTERM)
                _ = node.child.waitBlocking()
                node.quota?.remove()
            }
        }
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(
            connectionPool: .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: devices + 64)))
        let measured: (syncRate: Double, latencies: [Double], kilobytes: Double)
        do {
            let registered = try await register(on: nodes[0], client)
            let syncRate = try await syncLoad(nodes, registered, root: root, label: label)
            let streaming = nodes.last ?? nodes[0]
            let before = Self.residentKilobytes(streaming.child.pid)
            let (latencies, kilobytes) = try await push(issueOn: nodes[0], streamFrom: streaming, registered, client, memoryBefore: before)
            measured = (syncRate, latencies, kilobytes)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try? await client.shutdown()
        let (syncRate, latencies, kilobytes) = measured
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000 }
        return Result(syncRate: syncRate, p50: percentile(0.5), p99: percentile(0.99), received: sorted.count, kilobytesPerDevice: kilobytes)
    }

    /// Registers the devices (64 at once).
    func register(on node: Node, _ client: HTTPClient) async throws -> [Device] {
        try await withThrowingTaskGroup(of: Device.self) { group in
            var devices: [Device] = []
            for index in 0..<self.devices {
                if index >= 64, let device = try await group.next() { devices.append(device) }
                group.addTask {
                    let key = P256.Signing.PrivateKey()
                    var request = HTTPClientRequest(url: node.url + "/devices")
                    request.method = .POST
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(bytes: try JSONCoding.encoder().encode(RegistrationRequest(publicKey: PublicKeyJWK(key.publicKey),
                                                                                                                name: "bench-\(index)", externalID: nil))))
                    let response = try await client.execute(request, timeout: .seconds(30))
                    let body = try await response.body.collect(upTo: 1 << 20)
                    let answer = try JSONCoding.decoder().decode(RegistrationAnswer.self, from: Data(body.readableBytesView))
                    return Device(key: key, id: answer.deviceID, certificate: answer.certificate)
                }
            }
            for try await device in group { devices.append(device) }
            return devices
        }
    }

    /// Sync requests per second over every node at once: wrk per node, each request with its own signed header.
    func syncLoad(_ nodes: [Node], _ devices: [Device], root: URL, label: String) async throws -> Double {
        let perNode = 60_000 / nodes.count
        var scripts: [String] = []
        for (index, _) in nodes.enumerated() {
            let file = root.appendingPathComponent("\(label)-headers-\(index).txt")
            var text = ""
            for request in 0..<perNode { text += try devices[(request * nodes.count + index) % devices.count].signed("GET /backplane/sync") + "\n" }
            try text.write(to: file, atomically: true, encoding: .utf8)
            let script = root.appendingPathComponent("\(label)-sync-\(index).lua")
            try """
                local signed = {}
                for line in io.lines("\(file.path)") do signed[#signed + 1] = line end
                local next = 0
                request = function()
                  next = next % #signed + 1
                  return wrk.format("GET", "/backplane/sync?after=0", { ["Satchel-Device-Request"] = signed[next] })
                end
                """.write(to: script, atomically: true, encoding: .utf8)
            scripts.append(script.path)
        }
        let outputs = try await withThrowingTaskGroup(of: String.self) { group in
            for (index, node) in nodes.enumerated() {
                let (script, url, connections, seconds) = (scripts[index], node.url, 64 / nodes.count, seconds)
                group.addTask {
                    Tool.output(["wrk", "-t1", "-c\(connections)", "-d\(seconds)s", "-s", script, url + "/backplane/sync"]) ?? ""
                }
            }
            var all: [String] = []
            for try await output in group { all.append(output) }
            return all
        }
        var good = 0.0
        for output in outputs {
            let requests = Self.number(after: "requests in", before: true, output) ?? 0
            let bad = Self.number(after: "Non-2xx or 3xx responses:", before: false, output) ?? 0
            good += requests - bad
        }
        return good / Double(seconds)
    }

    /// wrk's "N requests in" (`before`: the number before the phrase) or "phrase N".
    static func number(after phrase: String, before: Bool, _ output: String) -> Double? {
        guard let line = output.split(separator: "\n").first(where: { $0.contains(phrase) }) else { return nil }
        let words = line.split(separator: " ")
        guard let index = words.firstIndex(where: { phrase.hasPrefix($0) || $0 == phrase.split(separator: " ").last ?? "" }) else { return nil }
        if before { return words.first.flatMap { Double($0) } }
        return words[(index + 1)...].first.flatMap { Double($0) } ?? words.last.flatMap { Double($0) }
    }

    static func residentKilobytes(_ pid: pid_t) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
        return line.flatMap { Double($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
    }
}
