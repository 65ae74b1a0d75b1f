#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long a connection may take and how many may be open: the defences every Satchel server has
/// against slow and idle clients (a slow-header or idle-connection flood must not starve real requests).
public struct ConnectionLimits: Sendable, Equatable {
    /// A request's head (request line and headers) must arrive whole within this, counted from the
    /// connection's opening or from the first byte of a later request on it. Default 10 s.
    public var headerTimeout: Duration
    /// A request's body must bring its first byte within this after the head, and then at least
    /// ``bodyMinimumRate`` on average over every stretch this long, or be answered 408 and closed (a body sent a
    /// byte at a time must not hold a connection). Default 10 s.
    public var bodyTimeout: Duration
    /// The slowest a request body may arrive, bytes per second averaged over ``bodyTimeout``. Default 1 KiB/s.
    public var bodyMinimumRate: Int
    /// A kept-alive connection with no request in progress is closed after this. Default 60 s.
    public var idleTimeout: Duration
    /// Connections served at once. At the cap a new connection takes the place of one that has no request in
    /// progress (a slow head, else the longest-idle connection, else the oldest new head); when every one is busy it
    /// may still ask for a path of ``alwaysServed`` on one of ``reserve`` extra connections; anything else gets 503.
    public var maxConnections: Int
    /// Connections one client address may hold at once: at this cap a new one from the address takes the place of
    /// that address's longest-waiting connection, or may ask for ``alwaysServed`` paths only, so one client
    /// cannot hold the whole cap with slow bodies. Behind a proxy every connection comes from the proxy's address:
    /// raise it to ``maxConnections`` there. Default: a quarter of ``maxConnections``, at least 8.
    public var maxConnectionsPerAddress: Int
    /// Long-lived streams (server-sent events) open at once: a connection that starts one leaves the cap of
    /// ``maxConnections`` for this budget of its own, so streams never take the connections requests need. Past it a
    /// new stream is refused (503). Default: a quarter of ``maxConnections``, at least 16.
    public var maxStreams: Int
    /// Extra connections, beyond the cap, that may ask for ``alwaysServed`` paths only.
    public var reserve: Int
    /// Paths answered even when every connection is busy (health checks).
    public var alwaysServed: Set<String>

    /// Creates limits; `maxConnections` defaults to ``defaultMaxConnections()``.
    public init(headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(10), bodyMinimumRate: Int = 1024,
                idleTimeout: Duration = .seconds(60), maxConnections: Int? = nil, maxConnectionsPerAddress: Int? = nil, maxStreams: Int? = nil,
                reserve: Int = 16, alwaysServed: Set<String> = ["/health"]) {
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.bodyMinimumRate = max(bodyMinimumRate, 0)
        self.idleTimeout = idleTimeout
        self.maxConnections = max(maxConnections ?? Self.defaultMaxConnections(), 1)
        self.maxConnectionsPerAddress = max(maxConnectionsPerAddress ?? max(8, self.maxConnections / 4), 1)
        self.maxStreams = max(maxStreams ?? max(16, self.maxConnections / 4), 1)
        self.reserve = max(reserve, 0)
        self.alwaysServed = alwaysServed
    }

    /// The cap derived from the process's descriptor limit, with room to spare for the database, log and
    /// key files and the reserve: the limit less an eighth of it (at least 64 descriptors), never below 16.
    public static func defaultMaxConnections() -> Int {
        var limit = rlimit()
        guard getrlimit(descriptorResource, &limit) == 0 else { return 1024 }
        let soft = Int(clamping: limit.rlim_cur)
        return max(16, soft - max(64, soft / 8))
    }

    /// Raises the soft descriptor limit to the hard limit (at most `ceiling`), as servers do at start so the
    /// cap is not needlessly low. Returns the soft limit in force afterwards.
    @discardableResult
    package static func raiseDescriptorLimit(ceiling: Int = 1 << 20) -> Int {
        var limit = rlimit()
        guard getrlimit(descriptorResource, &limit) == 0 else { return 0 }
        let wanted = min(limit.rlim_max, rlim_t(ceiling))
        if limit.rlim_cur < wanted {
            var raised = limit
            raised.rlim_cur = wanted
            if setrlimit(descriptorResource, &raised) == 0 { return Int(clamping: wanted) }
        }
        return Int(clamping: limit.rlim_cur)
    }
}

#if canImport(Glibc)
private let descriptorResource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
#else
private let descriptorResource = RLIMIT_NOFILE
#endif
