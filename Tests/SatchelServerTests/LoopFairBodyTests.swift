import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import SatchelBytes
import SatchelHTTP
import SatchelTestSupport
import Testing

/// A response body whose producer awaits nothing but its writes, served on its connection's event loop.
@Suite("Long bodies give their event loop back")
struct LoopFairBodyTests {
    /// What the endless body wrote, and whether its writing ended.
    final class Endless: Sendable {
        let writes = Locked(0)
        let ended = Locked(false)
    }

    struct Routes: RouteGroup {
        let endless: Endless

        func register(on router: Router<SatchelRequestContext>) {
            router.get("/endless") { _, _ in
                Response(status: .ok, body: ResponseBody { [endless] writer in
                    defer { endless.ended.withLock { $0 = true } }
                    let chunk = ByteBuffer(repeating: UInt8(ascii: "a"), count: 16_384)
                    while true {  // awaits nothing else: only a failed write ends it
                        try await writer.write(chunk)
                        endless.writes.withLock { $0 += 1 }
                    }
                })
            }
            router.get("/ping") { _, _ in "pong" }
        }
    }

    @Test("on a server of one event loop, an endless body in memory streams to its client; once the client leaves, its writing ends and the next request is answered (without turns, the loop would write to the closed connection for ever)")
    func endlessBody() async throws {
        let endless = Endless()
        var builder = ApplicationBuilder(port: 0)
        builder.add(Routes(endless: endless))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let app = Application(router: builder.router().0, server: .guardedHTTP1(registry: builder.connections),
                              configuration: .init(address: .hostname("127.0.0.1", port: 0)), eventLoopGroupProvider: .shared(group))
        try await app.test(.live) { client in
            let port = try #require(client.port)
            // Blocking sockets, on a thread of their own; what they saw is checked on the test's task.
            let (streamed, answer) = try await TestMedia.offloaded {
                let streamed: (count: Int, closed: Bool)
                do {
                    let reader = try RawConnection(port: port, timeout: 5)
                    reader.send("GET /endless HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    let part = reader.read(upTo: 1 << 20)
                    streamed = (part.text.utf8.count, part.closed)
                }  // the client leaves mid-body
                let other = try RawConnection(port: port, timeout: 5)
                other.send("GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                return (streamed, other.readResponse())
            }
            #expect(streamed.count >= 1 << 20 && !streamed.closed, "the body streams: \(streamed)")
            #expect(answer.hasPrefix("HTTP/1.1 200") && answer.hasSuffix("pong"), "the loop answers another connection: \(answer.prefix(100))")
            for _ in 0..<300 where !endless.ended.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
            #expect(endless.ended.withLock { $0 }, "the endless body's writing ended with its connection")
            let after = endless.writes.withLock { $0 }
            try await Task.sleep(for: .milliseconds(100))
            #expect(endless.writes.withLock { $0 } == after)
        }
        try await group.shutdownGracefully()
    }
}
