import Foundation
import SatchelRights

/// Where the proxy gets the rights and keys of protected assets (seam: the device agent; anything that can
/// answer the same, such as fixed keys in a benchmark).
///
/// A session asks for the keys once, when it opens, and for a `PlaybackGrant` — the rights and the secure clock —
/// which it evaluates in memory before every segment with a fresh ``readClock()``. It asks again only when
/// ``changeCount`` moved (a license installed, renewed or released in this process), when the grant says the rights
/// do not allow playback (it waits, bounded, for a renewal), and about once a minute (what another process changed,
/// and the clock kept: ``clockObserved(_:events:)``).
public protocol PlaybackRights: Sendable {
    /// The content keys of `asset`, when its rights allow playback now (else ``PlaybackError/notPlayable(_:)`` with
    /// the status). Registers no use: a session opened is not yet a play.
    func playbackKeys(asset: String) async throws(PlaybackError) -> [PlaybackKey]
    /// Registers a use of `asset` — its first use starts the playback window — when a session first
    /// serves its protected bytes.
    func registerUse(asset: String) async throws(PlaybackError)
    /// Renews `asset`'s license when its renewal is due, while a session plays it:
    /// answers whether it renewed; throws ``PlaybackError/notPlayable(_:)`` when the license server refused the
    /// renewal (the session ends); a server out of reach answers false (asked again later).
    func renewIfDue(asset: String) async throws(PlaybackError) -> Bool
    /// The asset's rights as held now, to evaluate in memory.
    func playbackGrant(asset: String) async throws(PlaybackError) -> PlaybackGrant
    /// A count that moves whenever a grant may have changed. Read before every segment: it must not wait.
    var changeCount: UInt64 { get }
    /// The device's clocks now. Called before every segment of a session whose grant is evaluated against the clock.
    func readClock() -> ClockReading
    /// A session's evaluation moved the secure clock (`events`: a rollback seen), or a minute passed: keep it.
    func clockObserved(_ reading: ClockReading, events: [ClockEvent]) async
}

extension PlaybackRights {
    /// No use is kept.
    public func registerUse(asset: String) async throws(PlaybackError) {}
    /// Nothing to renew.
    public func renewIfDue(asset: String) async throws(PlaybackError) -> Bool { false }
    /// The wall clock, with no boot clock (grants of a fixed status never read it).
    public func readClock() -> ClockReading { ClockReading(wall: Date(), boot: 0, bootID: "") }
    /// Nothing is kept.
    public func clockObserved(_ reading: ClockReading, events: [ClockEvent]) async {}
}
