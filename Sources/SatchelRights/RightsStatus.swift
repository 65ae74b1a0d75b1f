import Foundation

/// What the rights installed for a piece of content allow now: exactly the statuses a DRM agent reports.
public enum RightsStatus: String, Codable, Sendable, CaseIterable {
    /// The rights allow playback now.
    case valid
    /// No rights are installed.
    case noRights = "no-rights"
    /// Rights are installed but their start lies ahead.
    case inFuture = "in-future"
    /// Rights are installed but have ended.
    case expired
    /// Rights may be installed but depend on a date, and the device's clock cannot be trusted (it was set back).
    case untrustedTime = "untrusted-time"
}

/// How a license is being used: when it was issued (or last renewed) and when playback first started.
public struct RightsUsage: Codable, Sendable, Equatable {
    /// When the license was issued or last renewed (server time): a rental counts from here.
    public var acquired: Date
    /// When playback first started (nil: never): the playback window counts from here.
    public var firstUse: Date?

    /// Creates a usage record.
    public init(acquired: Date, firstUse: Date? = nil) {
        self.acquired = acquired
        self.firstUse = firstUse
    }
}

/// The answer to "may this play now?", with the dates that go with the status.
public struct RightsEvaluation: Codable, Sendable, Equatable {
    /// The status.
    public var status: RightsStatus
    /// The start date, if any.
    public var start: Date?
    /// The date the rights end, the earliest of the end date, the rental and a started playback window
    /// (nil: no end, or a playback window that has not started).
    public var end: Date?
    /// True while a playback window has not started yet: the rights expire only after first use.
    public var expireAfterFirstUse: Bool

    /// Creates an evaluation.
    public init(status: RightsStatus, start: Date? = nil, end: Date? = nil, expireAfterFirstUse: Bool = false) {
        self.status = status
        self.start = start
        self.end = end
        self.expireAfterFirstUse = expireAfterFirstUse
    }

    /// No rights at all.
    public static let none = RightsEvaluation(status: .noRights)
}

extension Rights {
    /// The date these rights end, for a license used as `usage` says: the earliest of the end date, the
    /// rental (from acquisition) and the playback window (from first use, once started).
    public func effectiveEnd(_ usage: RightsUsage) -> Date? {
        let rental = validitySeconds.map { usage.acquired.addingTimeInterval(TimeInterval($0)) }
        let window = playbackSeconds.flatMap { seconds in usage.firstUse.map { $0.addingTimeInterval(TimeInterval(seconds)) } }
        return [end, rental, window].compactMap { $0 }.min()
    }

    /// Evaluates the rights at `now` (the secure clock's time, nil when the clock is not trusted). The start
    /// is inclusive (playable at `start`), the end exclusive (expired at `end`). Date-based rights report
    /// `untrustedTime` when the clock is not trusted; rights without dates stay `valid`.
    public func evaluate(_ usage: RightsUsage, at now: Date?) -> RightsEvaluation {
        let end = effectiveEnd(usage)
        let afterFirstUse = playbackSeconds != nil && usage.firstUse == nil
        func answer(_ status: RightsStatus) -> RightsEvaluation {
            RightsEvaluation(status: status, start: start, end: end, expireAfterFirstUse: afterFirstUse)
        }
        guard isDateBased else { return answer(.valid) }
        guard let now else { return answer(.untrustedTime) }
        switch DateWindow(start: start, end: end).position(at: now) {
        case .after: return answer(.expired)
        case .before: return answer(.inFuture)
        case .within: return answer(.valid)
        }
    }

    /// True when a renewable license should be renewed at `now`: its renewal interval has passed since it
    /// was issued or last renewed, or less than a renewal interval is left before it ends.
    public func renewalDue(_ usage: RightsUsage, at now: Date) -> Bool {
        guard let renewalSeconds else { return false }
        let interval = TimeInterval(renewalSeconds)
        if now >= usage.acquired.addingTimeInterval(interval) { return true }
        if let end = effectiveEnd(usage), end.timeIntervalSince(now) < interval { return true }
        return false
    }
}
