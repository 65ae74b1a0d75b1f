import ServiceLifecycle

/// Owns a resource's lifetime inside ServiceLifecycle: waits until graceful shutdown begins, then closes the
/// resource (a database, an HTTP client) — after the HTTP server has stopped taking requests when it is added
/// after the server, as ServiceLifecycle stops services in reverse order.
public struct LifecycleService: Service {
    let name: String
    let close: @Sendable () async -> Void

    /// A service closing `name` with `close` at shutdown.
    public init(name: String, close: @escaping @Sendable () async -> Void) {
        self.name = name
        self.close = close
    }

    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }
}

extension LifecycleService: CustomStringConvertible {
    public var description: String { name }
}

/// Runs a piece of work for as long as the server runs (a listener), cancelled when graceful shutdown begins.
public struct BackgroundService: Service {
    let name: String
    let work: @Sendable () async -> Void

    /// A service running `work` until shutdown.
    public init(name: String, work: @escaping @Sendable () async -> Void) {
        self.name = name
        self.work = work
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await work() }
    }
}

extension BackgroundService: CustomStringConvertible {
    public var description: String { name }
}
