import Foundation
import Hummingbird
import HummingbirdTesting
import SatchelHTTP
import SatchelServer
import SatchelTestSupport
import Testing

/// The connection defences of `satchel serve` (and every server built on the HTTP kit), over real sockets.
@Suite("HTTP kit: timeouts, the connection cap, malformed HTTP", .serialized, .timeLimit(.minutes(1)))
struct ConnectionLimitTests {
    static let limits = ConnectionLimits(headerTimeout: .seconds(1), idleTimeout: .milliseconds(1500), maxConnections: 8, reserve: 2)

    static func app(_ world: LicenseServerTests.World, _ registry: ConnectionRegistry = ConnectionRegistry(limits: limits)) -> some ApplicationProtocol {
        LicenseServer.application(service: world.service, certificate: world.certificate, port: 0, connections: registry)
    }

    static let partialHead = "GET /health HTTP/1.1\r\nHost: a\r\n"
    static let health = "GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"

    @Test("slow heads and idle keep-alive connections are closed on time; at the cap /health still answers")
    func slowAndIdle() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        try await Self.app(world).test(.live) { client in
            let port = try #require(client.port)
            try await TestMedia.offloaded {
                // Read timeouts of 10 s, ten times the server's header timeout: its timers fire on time under load (no
                // event loop is blocked), so a connection still open after them was never closed.
                let slow = try (0..<8).map { _ in try RawConnection(port: port, timeout: 10) }
                for connection in slow { connection.send(Self.partialHead) }
                Thread.sleep(forTimeInterval: 0.2)
                // The cap is full of slow heads: a health check takes the place of the oldest.
                let check = try RawConnection(port: port)
                check.send(Self.health)
                #expect(check.readResponse().hasPrefix("HTTP/1.1 200"))
                #expect(slow[0].read().closed, "the longest-waiting slow head was closed to make room")
                // The others are closed when the header timeout passes, with no byte of a response.
                let start = Date()
                for connection in slow.dropFirst() {
                    let (text, closed) = connection.read()
                    #expect(closed && text.isEmpty)
                }
                // All of them within one read timeout (10 s): none waited for its own.
                #expect(Date().timeIntervalSince(start) < 10, "closed by the header timeout, not the read timeout")
                // A kept-alive connection with no new request is closed after the idle timeout.
                let idle = try RawConnection(port: port, timeout: 10)
                idle.send("GET /health HTTP/1.1\r\nHost: a\r\n\r\n")
                #expect(idle.readResponse().hasPrefix("HTTP/1.1 200"))
                let idleStart = Date()
                #expect(idle.read().closed)
                #expect(Date().timeIntervalSince(idleStart) >= 1.2, "kept alive until the idle timeout")
            }
        }
    }

    @Test("every connection busy: /health on the reserve, other paths 503 problem+json, beyond the reserve a plain 503")
    func busyCap() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let registry = ConnectionRegistry(limits: Self.limits)
        try await Self.app(world, registry).test(.live) { client in
            let port = try #require(client.port)
            try await TestMedia.offloaded {
                // Eight requests whose bodies never finish keep every regular connection busy.
                // One at a time: a connection whose head is not read yet is "waiting" and may be evicted at the cap
                // (the test client's own idle connection counts too). Waiting here is not a timing assertion.
                var busy: [RawConnection] = []
                for count in 1...8 {
                    let connection = try RawConnection(port: port)
                    connection.send("POST /clearkey/license HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{")
                    busy.append(connection)
                    for _ in 0..<600 where registry.busyConnections < count { Thread.sleep(forTimeInterval: 0.05) }
                }
                #expect(registry.busyConnections == 8, "\(registry.activities)")
                let check = try RawConnection(port: port)
                check.send(Self.health)
                #expect(check.readResponse().hasPrefix("HTTP/1.1 200"))
                let other = try RawConnection(port: port)
                other.send("GET /fps/certificate HTTP/1.1\r\nHost: a\r\n\r\n")
                let refused = other.readResponse()
                #expect(refused.hasPrefix("HTTP/1.1 503") && refused.contains("application/problem+json") && refused.contains("too-many-connections"), "\(refused)")
                // Two silent connections take the reserve; the next one is refused before any request.
                let silent = try (0..<2).map { _ in try RawConnection(port: port) }
                Thread.sleep(forTimeInterval: 0.2)
                let beyond = try RawConnection(port: port)
                let answer = beyond.read()
                #expect(answer.text.hasPrefix("HTTP/1.1 503") && answer.text.contains("too-many-connections") && answer.closed, "\(answer)")
                #expect(registry.counters.refused >= 1)
                _ = (busy, silent)
            }
        }
    }

    @Test("bodies sent a byte at a time cannot hold the cap: each gets 408 problem+json when its body is not in by the body timeout (below the minimum rate), and license requests are served again; a body at a good pace is taken")
    func slowBodies() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let limits = ConnectionLimits(headerTimeout: .seconds(5), bodyTimeout: .seconds(1), bodyMinimumRate: 64, idleTimeout: .seconds(5),
                                      maxConnections: 6, reserve: 1)
        let registry = ConnectionRegistry(limits: limits)
        try await Self.app(world, registry).test(.live) { client in
            let port = try #require(client.port)
            try await TestMedia.offloaded {
                // Seven POSTs (one more than the cap) trickle their bodies: a byte every 300 ms.
                let slow = try (0..<7).map { _ in try RawConnection(port: port, timeout: 6) }
                for connection in slow { connection.send("POST /clearkey/license HTTP/1.1\r\nHost: a\r\nContent-Length: 200\r\n\r\n{") }
                let start = Date()
                var answers: [String] = Array(repeating: "", count: slow.count)
                let writer = Thread {
                    for _ in 0..<20 {
                        Thread.sleep(forTimeInterval: 0.3)
                        for connection in slow { connection.send(" ") }
                    }
                }
                writer.start()
                for (index, connection) in slow.enumerated() { answers[index] = connection.readResponse() }
                // Each cut by the body timeout (its body never came whole): 408. The one beyond the cap gets 503, or (on a
                // loaded machine, when it arrives before another's head is in) takes the place of that one, which is closed.
                // A full suite on 2 cores once saw two closed (5 × 408): five is the floor asked for here.
                let timedOut = answers.filter { $0.hasPrefix("HTTP/1.1 408") && $0.contains("request-timeout") && $0.contains("application/problem+json") }
                #expect(timedOut.count >= 5 && answers.allSatisfy { $0.hasPrefix("HTTP/1.1 408") || $0.hasPrefix("HTTP/1.1 503") || $0.isEmpty },
                        "\(answers.map { $0.prefix(40) }) after \(Date().timeIntervalSince(start)) s")
                // The cap is free again: a license request is answered (401: no token, but served).
                let license = try RawConnection(port: port)
                license.send("POST /clearkey/license HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                #expect(license.readResponse().hasPrefix("HTTP/1.1 4"), "served, not 503")
                // A body that keeps the pace (its windows bring more than the minimum) is read whole, however long.
                let paced = try RawConnection(port: port, timeout: 6)
                paced.send("POST /clearkey/license HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n")
                for _ in 0..<10 {
                    paced.send(String(repeating: " ", count: 100))
                    Thread.sleep(forTimeInterval: 0.15)
                }
                let pacedAnswer = paced.readResponse()
                #expect(!pacedAnswer.hasPrefix("HTTP/1.1 408") && pacedAnswer.hasPrefix("HTTP/1.1 4"), "\(pacedAnswer.prefix(80))")
            }
        }
    }

    @Test("one client address cannot hold the cap with slow bodies: past its share (a quarter of the cap) it gets the reserve only, and another address's license request is served while all of its bodies trickle")
    func perAddressCap() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        let limits = ConnectionLimits(headerTimeout: .seconds(5), bodyTimeout: .seconds(10), bodyMinimumRate: 1, idleTimeout: .seconds(5),
                                      maxConnections: 32, reserve: 2)
        #expect(limits.maxConnectionsPerAddress == 8)
        let registry = ConnectionRegistry(limits: limits)
        try await Self.app(world, registry).test(.live) { client in
            let port = try #require(client.port)
            try await TestMedia.offloaded {
                // 40 POSTs from 127.0.0.2 whose bodies come at a pace the minimum rate accepts, none of them whole.
                var slow: [RawConnection] = []
                for _ in 0..<40 {
                    guard let connection = try? RawConnection(port: port, timeout: 3, source: "127.0.0.2") else { continue }
                    connection.send("POST /clearkey/license HTTP/1.1\r\nHost: a\r\nContent-Length: 100000\r\n\r\n{")
                    slow.append(connection)
                }
                Thread.sleep(forTimeInterval: 0.5)
                #expect(registry.busyConnections <= 8, "one address holds \(registry.busyConnections) requests")
                let license = try RawConnection(port: port, source: "127.0.0.1")
                license.send("POST /clearkey/license HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                #expect(license.readResponse().hasPrefix("HTTP/1.1 4"), "another address is served, not 503")
                let health = try RawConnection(port: port, source: "127.0.0.2")
                health.send(Self.health)
                #expect(health.readResponse().hasPrefix("HTTP/1.1 "), "the address past its share still reaches a health check or a refusal")
                withExtendedLifetime(slow) {}
            }
        }
    }

    @Test("malformed HTTP and a malformed chunked body are 400 problem+json; unknown routes 404, wrong methods 405 with Allow")
    func malformed() async throws {
        let world = try await LicenseServerTests.world("sqlite", packaged: false)
        defer { Task { await world.database.shutdown() } }
        try await Self.app(world).test(.live) { client in
            let port = try #require(client.port)
            try await TestMedia.offloaded {
                let garbage = try RawConnection(port: port)
                garbage.send("THIS IS NOT HTTP\r\n\r\n")
                let bad = garbage.readResponse()
                #expect(bad.hasPrefix("HTTP/1.1 400") && bad.contains("application/problem+json") && bad.contains("bad-request"), "\(bad)")
                let chunked = try RawConnection(port: port)
                chunked.send("POST /clearkey/license HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nxx\r\n")
                let chunkAnswer = chunked.readResponse()
                #expect(chunkAnswer.hasPrefix("HTTP/1.1 400") && chunkAnswer.contains("application/problem+json"), "\(chunkAnswer)")
            }
            let missing = try await client.execute(uri: "/no/such/route", method: .get)
            #expect(missing.status == .notFound && missing.headers[.contentType] == "application/problem+json")
            let wrong = try await client.execute(uri: "/fps/license", method: .get)
            #expect(wrong.status == .methodNotAllowed && wrong.headers[.allow] == "POST" && wrong.headers[.contentType] == "application/problem+json")
            let wrongKey = try await client.execute(uri: "/keys/0123456789abcdef0123456789abcdef", method: .delete)
            #expect(wrongKey.status == .methodNotAllowed && wrongKey.headers[.allow] == "GET, HEAD")
        }
    }

    @Test("the default cap comes from the descriptor limit, with room to spare")
    func defaultCap() {
        var limit = rlimit()
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let soft = Int(clamping: limit.rlim_cur)
        let cap = ConnectionLimits.defaultMaxConnections()
        #expect(cap >= 16 && (soft <= 80 || cap <= soft - 64) && cap >= soft - soft / 8 - 64, "cap \(cap) for \(soft) descriptors")
        #expect(ConnectionLimits().maxConnections == cap)
    }
}
