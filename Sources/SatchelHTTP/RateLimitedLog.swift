import Foundation

/// Lets at most `perSecond` log lines through each second; the next line that passes says how many were
/// suppressed meanwhile. For refusals and errors a client can provoke at will.
public final class RateLimitedLog: @unchecked Sendable {
    private let lock = NSLock()
    private let perSecond: Int
    private var windowStart = Date.distantPast
    private var inWindow = 0
    private var suppressed = 0

    /// A limiter letting `perSecond` lines through each second.
    public init(perSecond: Int) {
        self.perSecond = max(perSecond, 1)
    }

    /// Calls `write` with the count of lines suppressed since the last one written, unless this second's
    /// quota is spent (then the line is counted and dropped).
    public func log(now: Date = Date(), _ write: (Int) -> Void) {
        let suppressedSoFar: Int? = lock.withLock {
            if now.timeIntervalSince(windowStart) >= 1 {
                windowStart = now
                inWindow = 0
            }
            guard inWindow < perSecond else {
                suppressed += 1
                return nil
            }
            inWindow += 1
            defer { suppressed = 0 }
            return suppressed
        }
        if let suppressedSoFar { write(suppressedSoFar) }
    }
}
