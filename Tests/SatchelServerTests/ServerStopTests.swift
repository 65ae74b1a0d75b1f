import Foundation
import Hummingbird
import SatchelHTTP
import SatchelTestSupport
import Testing

/// A server stopped by cancelling its task, while connections it has accepted still wait to be served.
@Suite("HTTP kit: a server cancelled with connections waiting", .timeLimit(.minutes(1)))
struct ServerStopTests {
    struct Nothing: RouteGroup {
        func register(on router: Router<SatchelRequestContext>) {
            router.get("/health") { _, _ in "ok" }
        }
    }

    @Test("cancelled with 64 connections just accepted, four times: the process lives on, every connection is closed, and a new server serves")
    func cancelledWithQueuedConnections() async throws {
        for _ in 0..<4 {
            // A header timeout of 2 s, well inside the clients' 10 s read timeout.
            var builder = ApplicationBuilder(port: 0, connections: ConnectionRegistry(limits: ConnectionLimits(headerTimeout: .seconds(2))))
            builder.add(Nothing())
            let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
            let app = builder.build { channel in continuation.yield(channel.localAddress?.port ?? 0) }
            let task = Task { try await app.runService(gracefulShutdownSignals: []) }
            var port = 0
            for await bound in ports {
                port = bound
                break
            }
            let listening = port
            // Connected, so accepted by the kernel; most still wait in the server's queue when its task is cancelled.
            // A read timeout of 10 s: the stop closes them at once, and one it did not reach is closed by the server's
            // header timeout, on time under load (no event loop is blocked).
            let connections = try await TestMedia.offloaded { try (0..<64).map { _ in try RawConnection(port: listening, timeout: 10) } }
            task.cancel()
            _ = await task.result
            // Each is closed (an empty read at its end), none left hanging until the read timeout.
            let closed = try await TestMedia.offloaded { connections.map { $0.read().closed } }
            #expect(closed.allSatisfy { $0 }, "\(closed.filter { !$0 }.count) of 64 connections left open")
        }
        // The kit still serves: a fresh server answers.
        var builder = ApplicationBuilder(port: 0)
        builder.add(Nothing())
        try await builder.build().test(.live) { client in
            let answer = try await client.execute(uri: "/health", method: .get)
            #expect(answer.status == .ok)
        }
    }
}
