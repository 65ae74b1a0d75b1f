import Foundation
import Prometheus
import SatchelSystem

/// Prometheus metrics of the license service: licenses issued by type, errors by type, latency.
/// Kept in the server's own registry, so several servers in one process stay apart.
final class LicenseMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let latency: DurationHistogram
    private let counters = Locked<[String: Counter]>([:])

    init() {
        latency = registry.makeDurationHistogram(name: "satchel_license_duration_seconds",
                                                 buckets: [.milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(50),
                                                           .milliseconds(100), .milliseconds(500), .seconds(1)])
    }

    func issued(_ type: String) { counter("satchel_licenses_issued_total", type).increment() }

    func failed(_ type: String) { counter("satchel_license_errors_total", type).increment() }

    private func counter(_ name: String, _ type: String) -> Counter {
        counters.withLock { counters in
            if let counter = counters[name + "/" + type] { return counter }
            let counter = registry.makeCounter(name: name, labels: [("type", type)])
            counters[name + "/" + type] = counter
            return counter
        }
    }

    func observe(_ duration: Duration) { latency.recordNanoseconds(duration.nanoseconds) }

    /// The exposition text.
    func text() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
