import Foundation

/// The one clock abstraction: where time matters (the KSM's SPC-age check, license policies, token expiry,
/// download rules and availability windows) the code asks a clock, so tests and tools can set the time.
public protocol WallClock: Sendable {
    /// The current time.
    var now: Date { get }
}

/// The system's wall clock.
public struct SystemClock: WallClock {
    /// The system clock.
    public init() {}

    public var now: Date { Date() }
}

/// A clock stopped at one instant (value-level tests, replays).
public struct FixedClock: WallClock {
    /// The instant.
    public var now: Date

    /// A clock that always answers `now`.
    public init(_ now: Date) {
        self.now = now
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number (for rates and reports).
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
