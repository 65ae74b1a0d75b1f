import Foundation
import SatchelBytes
import SatchelSystem

/// Lets at most `perSecond` log lines through each second; the next line that passes says how many were
/// suppressed meanwhile. For refusals and errors a client can provoke at will.
public final class RateLimitedLog: Sendable {
    private struct Window {
        var start = Date.distantPast
        var lines = 0
        var suppressed = 0
    }

    private let perSecond: Int
    private let window = Locked(Window())

    /// A limiter letting `perSecond` lines through each second.
    public init(perSecond: Int) {
        self.perSecond = max(perSecond, 1)
    }

    /// Calls `write` with the count of lines suppressed since the last one written, unless this second's
    /// quota is spent (then the line is counted and dropped).
    public func log(now: Date = Date(), _ write: (Int) -> Void) {
        let perSecond = perSecond
        let suppressedSoFar: Int? = window.withLock { window in
            if now.timeIntervalSince(window.start) >= 1 {
                window.start = now
                window.lines = 0
            }
            guard window.lines < perSecond else {
                window.suppressed += 1
                return nil
            }
            window.lines += 1
            defer { window.suppressed = 0 }
            return window.suppressed
        }
        if let suppressedSoFar { write(suppressedSoFar) }
    }
}
