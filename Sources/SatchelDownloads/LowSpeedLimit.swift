import SatchelBytes
import SatchelSystem

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

/// Measures one body against a ``LowSpeedLimit``, window by window (``TransferPace``).
struct LowSpeedGuard {
    private var pace: TransferPace

    init(limit: LowSpeedLimit) {
        pace = TransferPace(bytesPerSecond: limit.bytesPerSecond, period: limit.period)
    }

    /// Counts `received` bytes; throws when the window that just closed was below the limit.
    mutating func check(received: Int, url: String) throws(DownloadFailure) {
        if let reason = pace.count(received) { throw .network(url: url, message: reason) }
    }
}
