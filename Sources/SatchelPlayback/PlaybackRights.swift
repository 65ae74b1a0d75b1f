import SatchelAgent
import SatchelRights

/// Where the proxy gets the rights and keys of protected assets (seam: the device agent; anything that can
/// answer the same, such as fixed keys in a benchmark).
public protocol PlaybackRights: Sendable {
    /// Registers a use of `asset` (its first use starts the playback window) and answers its content keys;
    /// throws ``PlaybackError/notPlayable(_:)`` with the status when its rights do not allow playback now.
    func playbackKeys(asset: String) async throws(PlaybackError) -> [PlaybackKey]
    /// The asset's rights status now (checked again before every segment).
    func playbackStatus(asset: String) async throws(PlaybackError) -> RightsStatus
}

extension Agent: PlaybackRights {
    public func playbackKeys(asset: String) async throws(PlaybackError) -> [PlaybackKey] {
        do {
            return try await use(asset: asset)
        } catch {
            throw Self.playbackError(error)
        }
    }

    public func playbackStatus(asset: String) async throws(PlaybackError) -> RightsStatus {
        do { return try await rights(asset: asset).status } catch {
            // A store changed outside Satchel holds no rights: the session ends as rights that ended do.
            if case .storeTampered = error { return .noRights }
            throw .storage(error.description)
        }
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
