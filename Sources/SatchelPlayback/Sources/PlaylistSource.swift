import SatchelHTTP
import SatchelStreams

/// An HLS playlist of the asset — without its key tags for a player without DRM, its key URIs pointed at the session
/// when forwarding — or a DASH / Smooth manifest passed through as it is.
struct PlaylistSource: SegmentSource {
    let path: String
    /// Served as it is (a manifest in pass-through).
    let passThrough: Bool

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let session = request.files.session
        let text = try request.files.playlist(path)
        var served = passThrough ? text
            : session.mode == .decrypt ? HLSAssetMap.clearPlaylist(text)
            : session.router.forwarding?.rewrite(text, token: session.token) ?? text
        if !passThrough, path == session.asset.entry, let audio = session.audio { served = AudioSelection.apply(audio, to: served) }
        return SegmentAnswer.text(served, ContentTypes.type(of: path))
    }
}
