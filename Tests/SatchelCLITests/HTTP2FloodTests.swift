import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing

/// HTTP/2 under the same connection defences as HTTP/1.1: connections that only sent their preface do not hold the
/// cap, and streams whose bodies never end neither grow the server's memory nor starve other clients.
@Suite(.serialized) struct HTTP2FloodTests {
    /// An HTTP/2 client in Python (the `h2` package) that opens `connections` TLS connections to `port` and on each
    /// `streams` POSTs whose bodies never end (as fast as the flow-control window allows, or with "slow" a byte every
    /// 2 s), with a PING every 5 s, for `seconds`; it prints the statuses its streams were answered with (and resets)
    /// as JSON. With `streams` 0 it sends the preface and settings only, then pings.
    static let client = #"""
    import json, socket, ssl, sys, time, h2.connection, h2.config, h2.events
    port, connections, streams, seconds, slow = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5] == "slow"
    context = ssl.create_default_context(); context.check_hostname = False; context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    open_ = []
    for _ in range(connections):
        try: sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=30), server_hostname="localhost")
        except OSError: continue
        conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        for _ in range(streams):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, [(":method", "POST"), (":path", "/clearkey/license"), (":scheme", "https"), (":authority", "localhost"),
                                    ("content-type", "application/json")])
        sock.sendall(conn.data_to_send()); sock.settimeout(0.05)
        open_.append((sock, conn))
    chunk = b" " if slow else b" " * 16384
    end, pinged, sent, statuses = time.time() + seconds, 0, 0, {"connections": len(open_)}
    while time.time() < end:
        ping = time.time() - pinged > 5  # more often is refused as too many pings
        if ping: pinged = time.time()
        send = not slow or time.time() - sent > 2  # slow: a byte a stream every 2 s
        if send: sent = time.time()
        for sock, conn in open_:
            try:
                data = sock.recv(65536)
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.ResponseReceived):
                        status = dict((k.decode(), v.decode()) for k, v in event.headers).get(":status", "?")
                        statuses[status] = statuses.get(status, 0) + 1
                    elif isinstance(event, h2.events.StreamReset):
                        statuses["reset"] = statuses.get("reset", 0) + 1
            except (socket.timeout, ssl.SSLWantReadError): pass
            except Exception: continue
            for sid in list(conn.streams):
                try:
                    while send and conn.local_flow_control_window(sid) >= len(chunk):
                        conn.send_data(sid, chunk)
                        if slow: break
                except Exception: pass
            try:
                if ping: conn.ping(b"12345678")
                sock.sendall(conn.data_to_send())
            except Exception: pass  # the server closed it (a refused or timed-out connection)
    print(json.dumps(statuses))
    """#

    @Test("ten connections of a hundred never-ending POST streams each, kept alive with pings: the streams past 32 on a connection are refused (503), the server's memory stays bounded and other clients are served")
    func flood() async throws {
        let (server, https, certificate, port, script) = try await Self.stage("h2-flood", maxConnections: 64)
        defer { server.stop() }
        let pid = try #require(server.process?.processIdentifier)
        @Sendable func residentMB() -> Double {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Double(line.split(separator: " ").dropFirst().first ?? "0").map { $0 / 1024 } ?? 0
        }
        try await TestMedia.offloaded {
            let before = residentMB()
            let answers = Locked<(statuses: [String: Int], errors: String)?>(nil)
            let attack = Thread {
                let run = try? ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, String(port), "10", "100", "12", "fast"])
                let statuses = (try? JSONDecoder().decode([String: Int].self, from: Data((run?.stdout ?? "").utf8))) ?? [:]
                answers.withLock { $0 = (statuses, String((run?.stderr ?? "the client did not run").suffix(400))) }
            }
            attack.start()
            var peak = before
            var served: [Int] = []
            for _ in 0..<12 {
                Thread.sleep(forTimeInterval: 1)
                peak = max(peak, residentMB())
                served.append(try TLSServeTests.curl(https + "/licenses/keys", ["--cacert", certificate, "--http1.1"]).status)
            }
            let waited = Date()
            while answers.withLock({ $0 == nil }), Date().timeIntervalSince(waited) < 300 { Thread.sleep(forTimeInterval: 0.5) }
            let (statuses, errors) = answers.withLock { $0 } ?? ([:], "the client did not finish")
            let connections = statuses["connections"] ?? 0
            #expect(connections >= 1 && statuses["503"] ?? 0 >= connections * (100 - 32), "the streams past 32 on a connection are refused: \(statuses) \(errors)")
            #expect(peak - before < 200, "the server grew from \(Int(before)) MB to \(Int(peak)) MB under the stream flood")
            #expect(served.filter { $0 == 200 }.count >= 10, "other clients were served during the flood: \(served)")
        }
    }

    @Test("HTTP/2 bodies that trickle (a byte every 2 s) are cut with 408 at the body timeout, as over HTTP/1.1")
    func slowStreams() async throws {
        let (server, _, _, port, script) = try await Self.stage("h2-slow", maxConnections: 64)
        defer { server.stop() }
        let run = try await TestMedia.offloaded {
            try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, String(port), "2", "10", "14", "slow"])
        }
        let statuses = try JSONDecoder().decode([String: Int].self, from: Data(run.stdout.utf8))
        #expect(statuses["408"] == 20, "every trickling stream is cut: \(statuses) \(run.stderr.suffix(300))")
    }

    /// An HTTPS `satchel serve` with `maxConnections`, its port, and the HTTP/2 client written beside it; fails the test
    /// when Python's h2 package is missing.
    static func stage(_ name: String, maxConnections: Int) async throws
        -> (server: AgentCommandTests.Server, https: String, certificate: String, port: Int, script: URL) {
        try TestMedia.require("python3")
        guard (try? await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", "import h2"]))?.status == 0 else {
            throw TestMedia.ToolError(message: "Python's h2 package is missing: scripts/test installs it with pip")
        }
        let (server, https, certificate, _, _) = try await TLSServeTests.server(name, extra: ["--max-connections", String(maxConnections)])
        let script = server.directory.appendingPathComponent("h2client.py")
        do {
            try client.write(to: script, atomically: true, encoding: .utf8)
            return (server, https, certificate, try #require(URL(string: https)?.port), script)
        } catch {
            server.stop()
            throw error
        }
    }

    @Test("twenty HTTP/2 connections that only sent their preface and pings do not hold a cap of 8: HTTP/1.1 requests are served")
    func prefaceOnly() async throws {
        let (server, https, certificate, port, script) = try await Self.stage("h2-preface", maxConnections: 8)
        defer { server.stop() }
        try await TestMedia.offloaded {
            let idle = Thread { _ = try? ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", script.path, String(port), "20", "0", "8", "fast"]) }
            idle.start()
            Thread.sleep(forTimeInterval: 2)
            var served: [Int] = [], exits: [Int32] = []
            for _ in 0..<5 {
                let answer = try TLSServeTests.curl(https + "/licenses/keys", ["--cacert", certificate, "--http1.1"])
                served.append(answer.status)
                exits.append(answer.exit)
                Thread.sleep(forTimeInterval: 0.5)
            }
            #expect(served.allSatisfy { $0 == 200 }, "HTTP/1.1 beside twenty idle HTTP/2 connections: \(served), curl's exits \(exits)")
        }
    }
}
