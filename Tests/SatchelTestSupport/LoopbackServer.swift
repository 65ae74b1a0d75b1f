import Hummingbird
import Logging
import SatchelHTTP

/// Starts a test's own HTTP server (an origin, a proxy) on a free loopback port.
public enum LoopbackServer {
    /// Serves `router` until the returned task is cancelled; returns the task and `http://127.0.0.1:PORT`.
    /// The server is Satchel's guarded HTTP/1 channel with limits no test reaches, so a task cancelled while
    /// connections wait to be served closes them (NIO's plain channel stops the process then).
    public static func start(_ router: Router<BasicRequestContext>, label: String) async -> (task: Task<Void, any Error>, baseURL: String) {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        var logger = Logger(label: label)
        logger.logLevel = .critical  // stopping mid-request (faults) is expected
        let limits = ConnectionLimits(headerTimeout: .seconds(120), idleTimeout: .seconds(300))
        let app = Application(router: router, server: .guardedHTTP1(registry: ConnectionRegistry(limits: limits)),
                              configuration: .init(address: .hostname("127.0.0.1", port: 0)),
                              onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let task = Task { try await app.runService(gracefulShutdownSignals: []) }
        var port = 0
        for await bound in ports {
            port = bound
            break
        }
        return (task, "http://127.0.0.1:\(port)")
    }
}
