import Foundation
import Logging
import SatchelBytes

/// Where one answer of the proxy spent its time — waiting on the origin, decrypting — for the request's log line
/// (what each request of the player cost: the origin's time, the decryption's, the origin's throughput). Bound to the
/// task answering the request; work that measures itself without one bound counts nowhere.
final class RequestTiming: Sendable {
    /// The answer being timed on this task, if any.
    @TaskLocal static var current: RequestTiming?

    /// A part of an answer's time.
    enum Part {
        case origin, decryption
    }

    private struct Spent {
        var origin: Duration = .zero
        var decryption: Duration = .zero
        var originBytes = 0
    }

    private let spent = Locked(Spent())
    private let started = ContinuousClock.now

    /// Adds `duration` to `part`, and `bytes` to what came from the origin.
    func add(_ part: Part, _ duration: Duration, bytes: Int = 0) {
        spent.withLock { spent in
            switch part {
            case .origin:
                spent.origin += duration
                spent.originBytes += bytes
            case .decryption:
                spent.decryption += duration
            }
        }
    }

    /// Runs `work`, its time counted as `part` of the current answer's.
    static func timed<T, E: Error>(_ part: Part, _ work: () throws(E) -> T) throws(E) -> T {
        guard let current else { return try work() }
        let start = ContinuousClock.now
        defer { current.add(part, ContinuousClock.now - start) }
        return try work()
    }

    /// The same for asynchronous work (an origin request); `bytes` of the result count as the origin's.
    static func timed<T, E: Error>(_ part: Part, bytes: (T) -> Int = { _ in 0 }, _ work: () async throws(E) -> T) async throws(E) -> T {
        guard let current else { return try await work() }
        let start = ContinuousClock.now
        let value = try await work()
        current.add(part, ContinuousClock.now - start, bytes: bytes(value))
        return value
    }

    /// The log line's metadata: the whole answer's milliseconds, the origin's and the decryption's, and the origin's
    /// throughput in kbit/s when it sent anything.
    func metadata() -> Logger.Metadata {
        let (total, spent) = (ContinuousClock.now - started, spent.current)
        var metadata: Logger.Metadata = ["ms": "\(Self.milliseconds(total))", "origin-ms": "\(Self.milliseconds(spent.origin))",
                                         "decrypt-ms": "\(Self.milliseconds(spent.decryption))"]
        let seconds = Double(spent.origin.components.seconds) + Double(spent.origin.components.attoseconds) / 1e18
        if spent.originBytes > 0, seconds > 0 {
            metadata["origin-bytes"] = "\(spent.originBytes)"
            metadata["origin-kbps"] = "\(Int(Double(spent.originBytes) * 8 / 1000 / seconds))"
        }
        return metadata
    }

    /// Milliseconds with three decimals (microseconds: loopback and decryption are fast).
    static func milliseconds(_ duration: Duration) -> String {
        let micro = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        return String(format: "%d.%03d", Int(micro / 1000), Int(micro % 1000))
    }
}
