import Foundation
import SatchelBytes

/// A clock that moves only when told: tests of expiry, windows and retries set or advance it.
public final class ManualClock: WallClock {
    private let time: Locked<Date>

    /// A clock at `start`.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        time = Locked(start)
    }

    public var now: Date { time.current }

    /// Moves the clock to `date`.
    public func set(_ date: Date) {
        time.withLock { $0 = date }
    }

    /// Moves the clock by `seconds` (negative moves it back).
    public func advance(_ seconds: TimeInterval) {
        time.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
