/// How the playback proxy serves one path of a session: each kind of file has its route, and each route its source
/// (which opens the bytes once, ranges, decrypts and streams them). Pure: decided from the session's asset map,
/// transcript and key forwarding, never from the file itself.
public enum StreamRoute: Sendable, Equatable {
    /// An HLS playlist of the asset: without its key tags when decrypting, its key URIs pointed at the session
    /// when forwarding.
    case playlist(String)
    /// A DASH MPD or Smooth manifest passed through as it is (players with DRM).
    case manifest(String)
    /// The top-level playlist of a DASH or Smooth source transcribed to HLS.
    case transcriptMaster
    /// A media playlist of a transcribed source (made again from a reloaded manifest when it is dynamic).
    case transcriptPlaylist(Int)
    /// A segment of a transcribed source: its pieces fetched, decrypted and remuxed to one clear MPEG-2 TS segment.
    case transcriptSegment(path: String, HLSTranscript.Segment)
    /// A file served as stored (clear media, an init segment, subtitles; anything in pass-through mode).
    case storedFile(String)
    /// A whole-segment AES-128 segment, decrypted.
    case aes128(String, SegmentProtection)
    /// A SAMPLE-AES MPEG-TS segment, made clear MPEG-TS.
    case sampleAESTransport(String, SegmentProtection)
    /// A CMAF fragment (`cbcs`: SAMPLE-AES, `cenc`: SAMPLE-AES-CTR) decrypted with its init segment's `tenc`.
    case cmafFragment(String, SegmentProtection)
    /// A protected CMAF init segment without its protection boxes (its sample entries clear again).
    case clearedInitSegment(String)
    /// A player's key or license request, forwarded to the key URI the playlist wrote.
    case forwardedKey(path: String, target: String)
    /// A single media file played as a byte stream and made clear as it is sent (a protected fragmented MP4 or PIFF
    /// `.ismv`, or one with several video tracks, of which the highest rate is played).
    case singleFile(String)
    /// A protected segment in a form the proxy cannot decrypt (the method and layout are named).
    case undecryptable(String, reason: String)

    /// True for routes whose bytes are media or keys: a protected session checks its rights before each one
    /// (playlists and manifests answer even once the rights have ended).
    public var carriesMedia: Bool {
        switch self {
        case .playlist, .manifest, .transcriptMaster, .transcriptPlaylist: false
        default: true
        }
    }
}

/// Decides the route of every path of one session. Pure.
public struct StreamRouter: Sendable {
    /// The asset's HLS playlists and the protection of their segments (empty for a DASH or Smooth source).
    public var map: HLSAssetMap
    /// A DASH or Smooth source transcribed to HLS (players without DRM).
    public var transcript: HLSTranscript?
    /// Pass-through mode's forwarded key URIs.
    public var forwarding: KeyForwarding?
    /// True when the proxy decrypts (players without DRM); false in pass-through.
    public var decrypting: Bool
    /// True for a DASH or Smooth source whose manifest is passed through as it is.
    public var keepsManifest: Bool
    /// The path of a single media file that is made clear as it is sent (nil: none, or one served as stored).
    public var singleFile: String?

    /// A router over a session's parts.
    public init(map: HLSAssetMap, transcript: HLSTranscript?, forwarding: KeyForwarding?, decrypting: Bool, keepsManifest: Bool,
                singleFile: String? = nil) {
        self.singleFile = singleFile
        self.map = map
        self.transcript = transcript
        self.forwarding = forwarding
        self.decrypting = decrypting
        self.keepsManifest = keepsManifest
    }

    /// The route of `path` (already resolved inside the asset), or nil when the session has no such file to
    /// serve (the engine's own folder is never served).
    public func route(_ path: String) -> StreamRoute? {
        guard !path.isEmpty, path != LocalPath.metadataFolder, !path.hasPrefix(LocalPath.metadataFolder + "/") || path.hasPrefix(KeyForwarding.prefix) else {
            return nil
        }
        if path.hasPrefix(KeyForwarding.prefix) {
            guard let target = forwarding?.target(path) else { return nil }
            return .forwardedKey(path: path, target: target)
        }
        if let transcript, path.hasPrefix(HLSTranscript.folder + "/") {
            switch transcript.resource(path) {
            case .master?: return .transcriptMaster
            case let .playlist(index)?: return .transcriptPlaylist(index)
            case let .segment(segment)?: return .transcriptSegment(path: path, segment)
            case nil: return nil
            }
        }
        if path == singleFile { return .singleFile(path) }
        if map.playlists.contains(path) { return keepsManifest ? .manifest(path) : .playlist(path) }
        guard decrypting else { return .storedFile(path) }
        if let protection = map.segments[path] {
            switch (protection.method, protection.map) {
            case (.aes128, _): return .aes128(path, protection)
            case (.sampleAES, nil): return .sampleAESTransport(path, protection)
            case (.sampleAES, _?), (.sampleAESCTR, _?): return .cmafFragment(path, protection)
            case (.sampleAESCTR, nil), (.other, _):
                return .undecryptable(path, reason: "\(protection.method.tag) segments\(protection.map == nil ? "" : " with an init segment") cannot be decrypted")
            }
        }
        if map.protectedInitSegments.contains(path) { return .clearedInitSegment(path) }
        return .storedFile(path)
    }
}
