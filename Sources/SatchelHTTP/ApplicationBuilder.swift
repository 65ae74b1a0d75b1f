import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceLifecycle

/// A set of routes one part of a server contributes (licenses; later the origin, the backplane, the dashboard).
public protocol RouteGroup: Sendable {
    /// Adds the group's routes to `router`.
    func register(on router: Router<SatchelRequestContext>)
}

/// Assembles every Satchel server the same way: long bodies that give their event loop back now and then
/// (``LoopFairBodyMiddleware``), problem+json for every error and unrouted request, request
/// logging without query strings, request metrics, a body-size limit, the guarded HTTP/1 channel (or HTTPS, with
/// HTTP/2 by ALPN) with its connection limits, then the route groups; services (a database's lifetime) run and stop inside
/// ServiceLifecycle with the server.
public struct ApplicationBuilder: Sendable {
    /// Address to bind.
    public var host: String
    /// Port to bind (0: any free port).
    public var port: Int
    /// Connection limits and their registry.
    public var connections: ConnectionRegistry
    /// Largest request body accepted (default 1 MiB).
    public var maximumBody: Int
    /// Where request metrics go.
    public var metrics: any MetricsFactory
    /// The server's logger.
    public var logger: Logger
    /// Rewrites a request path before it is logged (default: as is).
    public var redactPath: @Sendable (String) -> String = { $0 }
    /// Answer only requests whose `Host` is a loopback name (``LoopbackHostMiddleware``): for servers bound to
    /// loopback that a web page must not reach through DNS rebinding.
    public var loopbackHostsOnly = false
    /// Serve HTTPS with this certificate and key (HTTP/2 by ALPN, else HTTP/1.1) instead of plain HTTP/1.1.
    public var tls: TLSIdentity?
    private var groups: [any RouteGroup] = []
    private var services: [any Service] = []

    /// A builder for a server on `host`:`port`.
    public init(host: String = "127.0.0.1", port: Int = 8080, connections: ConnectionRegistry = ConnectionRegistry(limits: ConnectionLimits()),
                maximumBody: Int = 1 << 20, metrics: any MetricsFactory = MetricsSystem.factory, logger: Logger = Logger(label: "satchel.http")) {
        self.host = host
        self.port = port
        self.connections = connections
        self.maximumBody = maximumBody
        self.metrics = metrics
        self.logger = logger
    }

    /// Adds a route group.
    public mutating func add(_ group: some RouteGroup) {
        groups.append(group)
    }

    /// Adds a service that runs beside the server and stops with it (``LifecycleService`` closes a database).
    public mutating func add(service: some Service) {
        services.append(service)
    }

    /// The router with the kit's middleware and every group's routes (for tests that drive a router directly).
    public func router() -> (Router<SatchelRequestContext>, RouteTable) {
        let router = Router(context: SatchelRequestContext.self)
        let table = RouteTable()
        router.add(middleware: LoopFairBodyMiddleware())
        router.add(middleware: ProblemMiddleware(table: table, redact: redactPath))
        router.add(middleware: RequestLogMiddleware(logger: logger, redact: redactPath))
        router.add(middleware: RequestMetricsMiddleware(factory: metrics))
        router.add(middleware: BodyLimitMiddleware(limit: maximumBody))
        if loopbackHostsOnly { router.add(middleware: LoopbackHostMiddleware()) }
        for group in groups { group.register(on: router) }
        table.load(router)
        return (router, table)
    }

    /// The application.
    public func build(onServerRunning: @escaping @Sendable (any Channel) async -> Void = { _ in }) -> some ApplicationProtocol {
        let (router, _) = router()
        var application = Application(router: router, server: tls.map { .guardedTLS(registry: connections, identity: $0) } ?? .guardedHTTP1(registry: connections),
                                      configuration: .init(address: .hostname(host, port: port), serverName: "Satchel"),
                                      onServerRunning: onServerRunning, logger: logger)
        application.addServices(services)
        return application
    }
}
