import CoreMetrics
import HTTPTypes
import Hummingbird
import Metrics

/// Counts requests and times them per route and status class through swift-metrics:
/// `satchel_http_requests_total{route,method,status}` and `satchel_http_request_duration_seconds{route,method}`.
/// The route is the router's pattern (`/keys/{keyId}`), never the concrete path, so a client cannot
/// grow the label set; unrouted requests share the route `unrouted`.
public struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let factory: any MetricsFactory

    /// A middleware recording into `factory` (a server's own Prometheus registry, or the global one).
    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let clock = ContinuousClock()
        let start = clock.now
        var status = 500
        defer {
            let route = context.endpointPath.flatMap { $0 == "NotFound" ? nil : $0 } ?? "unrouted"
            let method = request.method.rawValue
            Counter(label: "satchel_http_requests_total",
                    dimensions: [("route", route), ("method", method), ("status", "\(status / 100)xx")], factory: factory).increment()
            Timer(label: "satchel_http_request_duration_seconds", dimensions: [("route", route), ("method", method)],
                  preferredDisplayUnit: .seconds, factory: factory).recordInterval(since: start, clock: clock)
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
