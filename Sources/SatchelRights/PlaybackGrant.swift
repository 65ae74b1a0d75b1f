import Foundation

/// What a playback session holds of an asset's rights, evaluated in memory before every segment: the license's
/// rights and how it has been used, and a copy of the device's secure clock. Each evaluation takes a fresh reading
/// of the clocks, so a wall clock set back between two requests is caught exactly as the agent would catch it
/// (`untrustedTime`), and an end that passes mid-play is seen at once — without a visit to the store per segment.
public struct PlaybackGrant: Sendable, Equatable {
    /// The license's rights (nil: no license).
    public var rights: Rights?
    /// When it was acquired and first used.
    public var usage: RightsUsage
    /// The secure clock as the store last kept it (advanced in memory by each reading).
    public var clock: SecureClock
    /// A fixed answer instead of an evaluation (content whose rights come from elsewhere: tests, a benchmark).
    public var fixed: RightsStatus?

    /// A grant evaluated against the secure clock.
    public init(rights: Rights?, usage: RightsUsage, clock: SecureClock) {
        self.rights = rights
        self.usage = usage
        self.clock = clock
        fixed = nil
    }

    /// A grant that always answers `status`.
    public static func fixed(_ status: RightsStatus) -> PlaybackGrant {
        var grant = PlaybackGrant(rights: nil, usage: RightsUsage(acquired: .distantPast, firstUse: nil), clock: SecureClock())
        grant.fixed = status
        return grant
    }

    /// The status at `reading`, with the clock's events (a rollback seen now, reported once).
    public mutating func status(at reading: ClockReading) -> (status: RightsStatus, events: [ClockEvent]) {
        if let fixed { return (fixed, []) }
        let events = clock.observe(reading)
        guard let rights else { return (.noRights, events) }
        return (rights.evaluate(usage, at: clock.now(reading)).status, events)
    }
}
