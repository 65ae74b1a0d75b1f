/// Whether a transfer still moves fast enough to go on (curl's `--speed-limit` / `--speed-time`, plus an overall
/// deadline): below `bytesPerSecond` on average over a window of `period`, or past `deadline` since it began, it
/// must stop. A value, fed with each piece received.
public struct TransferPace: Sendable {
    /// The slowest average accepted over one window, bytes per second (0: no floor).
    public let bytesPerSecond: Int
    /// The window the average is taken over.
    public let period: Duration
    /// The most a whole transfer may take (nil: no limit).
    public let deadline: Duration?
    private let clock = ContinuousClock()
    private let started: ContinuousClock.Instant
    private var windowStart: ContinuousClock.Instant
    private var windowBytes = 0

    /// A pace starting now.
    public init(bytesPerSecond: Int, period: Duration, deadline: Duration? = nil) {
        self.bytesPerSecond = max(bytesPerSecond, 0)
        self.period = period
        self.deadline = deadline
        started = clock.now
        windowStart = started
    }

    /// Counts `received` bytes; answers why the transfer must stop (in words, no URL), or nil.
    public mutating func count(_ received: Int) -> String? {
        let now = clock.now
        if let deadline, started.duration(to: now) > deadline { return "the transfer took longer than \(deadline)" }
        guard bytesPerSecond > 0, period > .zero else { return nil }
        windowBytes = windowBytes.addingReportingOverflow(max(received, 0)).partialValue
        let elapsed = windowStart.duration(to: now)
        guard elapsed >= period else { return nil }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if Double(windowBytes) < Double(bytesPerSecond) * seconds {
            return "the transfer was slower than \(bytesPerSecond) bytes/s for \(period)"
        }
        windowStart = now
        windowBytes = 0
        return nil
    }
}
