import Hummingbird
import HummingbirdTesting
import NIOCore
import NIOPosix
import SatchelHTTP
import Testing

/// A default actor a handler calls.
private actor Tally {
    private var count = 0
    func add() -> Int {
        count += 1
        return count
    }
}

@Suite("Requests served on their connection's event loop")
struct LoopTaskExecutorTests {
    @Test("a handler behind the guarded HTTP/1 channel runs on an event loop's thread, and is back on it after calling an actor and after a sleep (on the task pool it would be on none)")
    func onTheLoop() async throws {
        let router = Router()
        let tally = Tally()
        router.get("where") { _, _ -> String in
            var seen = [MultiThreadedEventLoopGroup.currentEventLoop != nil]
            _ = await tally.add()
            seen.append(MultiThreadedEventLoopGroup.currentEventLoop != nil)
            try await Task.sleep(for: .milliseconds(5))
            seen.append(MultiThreadedEventLoopGroup.currentEventLoop != nil)
            return seen.map { $0 ? "loop" : "elsewhere" }.joined(separator: " ")
        }
        let app = Application(router: router, server: .guardedHTTP1(registry: ConnectionRegistry(limits: ConnectionLimits())),
                              configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in
            for _ in 0..<3 {
                try await client.execute(uri: "/where", method: .get) { response in
                    #expect(String(buffer: response.body) == "loop loop loop")
                }
            }
        }
    }
}
