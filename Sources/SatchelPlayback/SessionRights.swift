import Foundation
import SatchelRights
import SatchelBytes
import SatchelSystem

/// A session's rights, evaluated in memory before every media request: the grant taken from the rights source, a
/// fresh reading of the clocks each time (so a wall clock set back between two requests, or an end passing mid-play,
/// is seen at once), and a visit to the source only when something changed, once a minute, or while the rights do
/// not allow playback.
///
/// When they end, the end is reported once and the request is held off: it waits, up to the
/// configured bound, for a renewal or a new license, and is answered as soon as one allows playback; the notice is
/// armed again once the rights are valid again.
final class SessionRights: Sendable {
    /// How often the grant is taken again (what another process changed) and the clock kept.
    static let refreshInterval: Duration = .seconds(60)
    /// How often a held-off request asks the source again.
    static let pollInterval: Duration = .milliseconds(250)

    private struct State: Sendable {
        var grant: PlaybackGrant
        var changeCount: UInt64
        var takenAt: ContinuousClock.Instant
        /// Set once the end was reported; cleared when the rights allow playback again.
        var ended = false
    }

    let source: any PlaybackRights
    /// The asset whose rights these are (the license asset).
    let asset: String
    let holdOff: Duration
    private let state: Locked<State>

    /// The rights of `asset` from `source`, starting from `grant`.
    init(source: any PlaybackRights, asset: String, grant: PlaybackGrant, changeCount: UInt64, holdOff: Duration) {
        self.source = source
        self.asset = asset
        self.holdOff = holdOff
        state = Locked(State(grant: grant, changeCount: changeCount, takenAt: .now))
    }

    /// Whether this session has registered its use (at its first protected bytes).
    private let used = Locked(false)

    /// Registers the session's use once, as it first serves protected bytes (the playback window starts then); a
    /// failure to register leaves it to the next request.
    func registerFirstUse() async throws(PlaybackError) {
        guard used.withLock({ value -> Bool in
            defer { value = true }
            return !value
        }) else { return }
        do { try await source.registerUse(asset: asset) } catch {
            used.withLock { $0 = false }
            throw error
        }
    }

    /// What the license demands of the outputs (nil: no rights).
    var outputControls: OutputControls? { state.withLock { $0.grant.rights?.output } }

    /// The rights of `asset` as `source` holds them now.
    static func taking(_ asset: String, from source: any PlaybackRights, holdOff: Duration) async throws(PlaybackError) -> SessionRights {
        let count = source.changeCount
        return SessionRights(source: source, asset: asset, grant: try await source.playbackGrant(asset: asset), changeCount: count, holdOff: holdOff)
    }

    /// Returns when the rights allow playback now; otherwise reports the end (`ended`, once until they allow it
    /// again), holds the request off for up to ``holdOff`` and throws ``PlaybackError/notPlayable(_:)``.
    func check(ended: @Sendable (RightsStatus) -> Void) async throws(PlaybackError) {
        var status = try await evaluate(refresh: false)
        guard status != .valid else { return }
        if state.withLock({ state in
            defer { state.ended = true }
            return !state.ended
        }) { ended(status) }
        let deadline = ContinuousClock.now.advanced(by: holdOff)
        while ContinuousClock.now < deadline {
            do { try await Task.sleep(for: min(Self.pollInterval, ContinuousClock.now.duration(to: deadline))) } catch { break }
            status = try await evaluate(refresh: true)
            if status == .valid { return }
        }
        throw .notPlayable(status)
    }

    /// The status now: the grant taken again when `refresh`, when the source's count moved or when a minute has
    /// passed (the clock is then kept); the clock's events go to the source.
    private func evaluate(refresh: Bool) async throws(PlaybackError) -> RightsStatus {
        let count = source.changeCount
        let (stale, due) = state.withLock { ($0.changeCount != count, $0.takenAt.duration(to: .now) >= Self.refreshInterval) }
        if refresh || stale || due {
            let grant = try await source.playbackGrant(asset: asset)
            state.withLock { $0 = State(grant: grant, changeCount: count, takenAt: .now, ended: $0.ended) }
        }
        let reading = source.readClock()
        let (status, events) = state.withLock { state in
            let result = state.grant.status(at: reading)
            if result.status == .valid { state.ended = false }
            return result
        }
        if !events.isEmpty || due { await source.clockObserved(reading, events: events) }
        return status
    }
}
