import SatchelBytes
/// A body that trickles is a failure: below `bytesPerSecond` on average over `period`, the download
/// stops with a retryable network failure (curl's `--speed-limit` / `--speed-time`).
public struct LowSpeedLimit: Sendable, Equatable {
    /// The slowest average accepted, in bytes per second (0 turns the check off).
    public var bytesPerSecond: Int
    /// How long the average is taken over.
    public var period: Duration

    /// The default: below 1 KiB/s for 30 s.
    public init(bytesPerSecond: Int = 1024, period: Duration = .seconds(30)) {
        self.bytesPerSecond = bytesPerSecond
        self.period = period
    }
}

/// Measures one body against a ``LowSpeedLimit``, window by window.
struct LowSpeedGuard {
    let limit: LowSpeedLimit
    private let clock = ContinuousClock()
    private var windowStart: ContinuousClock.Instant
    private var windowBytes = 0

    init(limit: LowSpeedLimit) {
        self.limit = limit
        windowStart = clock.now
    }

    /// Counts `received` bytes; throws when the window that just closed was below the limit.
    mutating func check(received: Int, url: String) throws(DownloadFailure) {
        guard limit.bytesPerSecond > 0, limit.period > .zero else { return }
        windowBytes = windowBytes.addingReportingOverflow(received).partialValue
        let elapsed = windowStart.duration(to: clock.now)
        guard elapsed >= limit.period else { return }
        let seconds = elapsed.inSeconds
        if Double(windowBytes) < Double(limit.bytesPerSecond) * seconds {
            throw .network(url: url, message: "the transfer was slower than \(limit.bytesPerSecond) bytes/s for \(limit.period)")
        }
        windowStart = clock.now
        windowBytes = 0
    }
}
