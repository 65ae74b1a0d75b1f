import SatchelMedia
import SatchelRights
import SatchelStreams

/// What a session's content is (whether it is protected, its output controls, its audio tracks):
/// known when its session opens, and — but for the output controls, which come with a license — before any license.
public struct ContentInfo: Sendable, Equatable, Encodable {
    /// Whether the content is protected.
    public var protected: Bool
    /// Its protection schemes: `aes-128`, `sample-aes` (HLS, or CMAF `cbcs`), `cenc`, `satchel-file` (a protected
    /// document); empty when clear.
    public var drm: [String]
    /// Its audio tracks, as the player is offered them.
    public var audioTracks: [AudioTrack]
    /// What the license demands of the outputs (nil: no license, or clear content).
    public var outputControls: OutputControls?

    /// A description.
    public init(protected: Bool, drm: [String] = [], audioTracks: [AudioTrack] = [], outputControls: OutputControls? = nil) {
        self.protected = protected
        self.drm = drm
        self.audioTracks = audioTracks
        self.outputControls = outputControls
    }

    /// The schemes of an HLS asset map: its key methods and its protected init segments' schemes.
    static func schemes(of map: HLSAssetMap) -> [String] {
        Set(map.segments.values.map(\.method.scheme)).sorted()
    }

    /// The audio renditions of an HLS master playlist (none for a media playlist or text that does not parse), each
    /// with the audio codec of the variants that use its group.
    static func audioTracks(master text: String) -> [AudioTrack] {
        guard text.contains("#EXT-X-STREAM-INF"), let master = try? HLSMasterPlaylist(parsing: text) else { return [] }
        return master.renditions.filter { $0.type.uppercased() == "AUDIO" }.map { rendition in
            let codec = master.variants.first { $0.audioGroup == rendition.groupID }?.codecs?.split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.first { ["mp4a", "ac-3", "ec-3", "opus", "flac"].contains(where: $0.lowercased().hasPrefix) }
            return AudioTrack(language: rendition.language, name: rendition.name, codec: codec, channels: rendition.channels)
        }
    }
}

extension ContentInfo {
    /// The audio of a DASH MPD (its first period's audio adaptation sets) or a Smooth manifest (its audio streams),
    /// each named by its language and any role but "main"; none for text that does not parse.
    static func audioTracks(manifest text: String) -> [AudioTrack] {
        if let mpd = try? DASHManifest(parsing: text) {
            let sets = (mpd.periods.first?.adaptationSets ?? []).filter { $0.kind == "audio" }
            return sets.enumerated().map { index, set in
                let representation = set.representations.first
                let roles = set.roles.filter { $0 != "main" }
                let name = ([set.language ?? "audio \(index + 1)"] + roles).joined(separator: " ")
                return AudioTrack(language: set.language, name: name, codec: representation?.codecs, channels: representation?.audioChannels.map(String.init))
            }
        }
        if let smooth = try? SmoothManifest(parsing: text) {
            let streams = smooth.streams.filter { $0.type == "audio" }
            return streams.enumerated().map { index, stream in
                let level = stream.qualityLevels.first
                return AudioTrack(language: stream.language, name: stream.name ?? stream.language ?? "audio \(index + 1)", codec: level?.fourCC,
                                  channels: level?.channels.map(String.init))
            }
        }
        return []
    }
}

/// One audio track of a session's content.
public struct AudioTrack: Sendable, Equatable, Encodable {
    /// Its language (BCP 47), when given.
    public var language: String?
    /// Its name, as a player lists it.
    public var name: String
    /// Its codec (`mp4a.40.2`, `ec-3`), when known.
    public var codec: String?
    /// Its channels (`2`, `6`), when given.
    public var channels: String?

    /// A track.
    public init(language: String?, name: String, codec: String?, channels: String?) {
        self.language = language
        self.name = name
        self.codec = codec
        self.channels = channels
    }
}
