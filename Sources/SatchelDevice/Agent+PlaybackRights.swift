import SatchelAgent
import SatchelPlayback
import SatchelRights

/// The device agent as the proxy's source of keys and rights.
extension Agent: PlaybackRights {
    public func playbackKeys(asset: String) async throws(PlaybackError) -> [PlaybackKey] {
        do {
            return try await keys(asset: asset)
        } catch {
            throw Self.playbackError(error)
        }
    }

    public func registerUse(asset: String) async throws(PlaybackError) {
        do {
            _ = try await use(asset: asset)
        } catch {
            throw Self.playbackError(error)
        }
    }

    public func playbackGrant(asset: String) async throws(PlaybackError) -> PlaybackGrant {
        do { return try await grant(asset: asset) } catch {
            // A store changed outside Satchel holds no rights: the session ends as rights that ended do.
            if case .storeTampered = error { return .fixed(.noRights) }
            throw .storage(error.description)
        }
    }

    public func clockObserved(_ reading: ClockReading, events: [ClockEvent]) async {
        await keepClock(reading)
    }

    /// The proxy's error for the agent's: rights that do not allow playback (a tampered store holds none), else storage.
    static func playbackError(_ error: AgentError) -> PlaybackError {
        switch error {
        case let .notPlayable(status): .notPlayable(status)
        case .storeTampered: .notPlayable(.noRights)
        default: .storage(error.description)
        }
    }
}
