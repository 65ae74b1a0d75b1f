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
