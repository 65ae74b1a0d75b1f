import Foundation
import SatchelBytes
import SatchelRights

extension Agent {
    // MARK: Playback

    /// A value that moves with every change to the store — this agent's (licenses, uses, releases, the clock's trust)
    /// or another process's on the same data directory: read without waiting.
    public nonisolated var changeCount: UInt64 { store.changeStamp }

    /// The device's clocks now.
    public nonisolated func readClock() -> ClockReading { clockReader.read() }

    /// The rights of `asset`'s newest license that the store vouches for, with the secure clock, for a playback
    /// session to evaluate in memory before every segment.
    public func grant(asset: String) async throws(AgentError) -> PlaybackGrant {
        var snapshot = try await trustedSnapshot()
        var secure = try await clock.observe(clockReader.read(), in: snapshot)
        if !secure.trusted, await clock.restoreTrust() {
            snapshot = try await trustedSnapshot()
            secure = try await clock.observe(clockReader.read(), in: snapshot)
        }
        guard let license = device.newest(asset, in: snapshot) else {
            return PlaybackGrant(rights: nil, usage: RightsUsage(acquired: .distantPast), clock: secure)
        }
        return PlaybackGrant(rights: license.rights, usage: license.usage, clock: secure)
    }

    /// Keeps the secure clock as a session's `reading` moved it (the same reading gives the store's clock the same
    /// result: a rollback is recorded and reported once; the mark is stored at most once a minute).
    public func keepClock(_ reading: ClockReading) async {
        guard let snapshot = try? await store.snapshot() else { return }
        _ = try? await clock.observe(reading, in: snapshot)
    }
}
