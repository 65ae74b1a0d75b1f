import CoreMetrics
import HTTPTypes
import Hummingbird
import Metrics
import SatchelBytes
import SatchelSystem

/// Counts requests and times them per route and status class through swift-metrics:
/// `satchel_http_requests_total{route,method,status}` and `satchel_http_request_duration_seconds{route,method}`.
/// The route is the router's pattern (`/keys/{keyId}`), never the concrete path, so a client cannot
/// grow the label set; unrouted requests share the route `unrouted`.
public struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let factory: any MetricsFactory
    /// Counters and timers made so far, by their dimensions (the set is bounded by routes × methods × classes).
    private let counters = Locked<[String: Counter]>([:])
    private let timers = Locked<[String: Timer]>([:])

    /// A middleware recording into `factory` (a server's own Prometheus registry, or the global one).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    private func counter(route: String, method: String, status: String) -> Counter {
        let factory = factory
        return counters.withLock { table in
            let key = route + " " + method + " " + status
            if let counter = table[key] { return counter }
            let counter = Counter(label: "satchel_http_requests_total", dimensions: [("route", route), ("method", method), ("status", status)],
                                  factory: factory)
            table[key] = counter
            return counter
        }
    }

    private func timer(route: String, method: String) -> Timer {
        let factory = factory
        return timers.withLock { table in
            let key = route + " " + method
            if let timer = table[key] { return timer }
            let timer = Timer(label: "satchel_http_request_duration_seconds", dimensions: [("route", route), ("method", method)],
                              preferredDisplayUnit: .seconds, factory: factory)
            table[key] = timer
            return timer
        }
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let clock = ContinuousClock()
        let start = clock.now
        var status = 500
        defer {
            let route = context.endpointPath.flatMap { $0 == "NotFound" ? nil : $0 } ?? "unrouted"
            let method = request.method.rawValue
            counter(route: route, method: method, status: "\(status / 100)xx").increment()
            timer(route: route, method: method).recordInterval(since: start, clock: clock)
        }
        do {
            let response = try await next(request, context)
            status = response.status.code
            return response
        } catch {
            status = Problem(any: error).status.code
            throw error
        }
    }
}

extension Timer {
    fileprivate func recordInterval(since start: ContinuousClock.Instant, clock: ContinuousClock) {
        let (seconds, attoseconds) = start.duration(to: clock.now).components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
