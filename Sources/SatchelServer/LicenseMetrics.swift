import Foundation
import Prometheus
import SatchelBytes
import SatchelSystem

/// Prometheus metrics of the license service: licenses issued by type, errors by type, latency.
/// Kept in the server's own registry, so several servers in one process stay apart.
final class LicenseMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let latency: DurationHistogram
    private let counters = Locked<[String: Counter]>([:])

    init() {
        latency = registry.makeDurationHistogram(descriptor: MetricNameDescriptor(namespace: "satchel", metricName: "license_duration", unitName: "seconds",
                                                                                  helpText: "Time to answer a license request"),
                                                 buckets: [.milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(50),
                                                           .milliseconds(100), .milliseconds(500), .seconds(1)])
    }

    func issued(_ type: String) { counter("licenses_issued", "Licenses issued, by type", type).increment() }

    func failed(_ type: String) { counter("license_errors", "License requests refused, by problem type", type).increment() }

    /// The counter `satchel_<name>_total` with the label `type`.
    private func counter(_ name: String, _ help: String, _ type: String) -> Counter {
        counters.withLock { counters in
            if let counter = counters[name + "/" + type] { return counter }
            let descriptor = MetricNameDescriptor(namespace: "satchel", metricName: name, unitName: "total", helpText: help)
            let counter = registry.makeCounter(descriptor: descriptor, labels: [("type", type)])
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
