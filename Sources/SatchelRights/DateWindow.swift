import Foundation

/// The one rule for a span of time that something is available in — a license's rights, an asset's policy on
/// the license server, a download's availability window: the start is inclusive (available at `start`), the end
/// exclusive (over at `end`). Every place that judges a window asks this type, on the server and on the device.
public struct DateWindow: Sendable, Equatable {
    /// Where a moment stands against the window.
    public enum Position: Sendable, Equatable {
        /// Before the start.
        case before
        /// From the start (inclusive) to the end (exclusive).
        case within
        /// At or after the end.
        case after
    }

    /// The first moment inside (nil: open at the start).
    public var start: Date?
    /// The first moment outside after it (nil: open at the end).
    public var end: Date?

    /// A window from `start` to `end`.
    public init(start: Date? = nil, end: Date? = nil) {
        self.start = start
        self.end = end
    }

    /// Where `now` stands: after the end wins over before the start (a window whose end precedes its start is over).
    public func position(at now: Date) -> Position {
        if let end, now >= end { return .after }
        if let start, now < start { return .before }
        return .within
    }

    /// True when `now` is inside.
    public func contains(_ now: Date) -> Bool { position(at: now) == .within }

    /// True once the start has come (whatever the end).
    public func hasStarted(at now: Date) -> Bool { start.map { now >= $0 } ?? true }
}
