import Foundation
import SatchelMedia
import SatchelProtection

/// A DASH presentation (or a Smooth Streaming one: `HLSTranscript+Smooth`) transcribed to HLS for players that
/// only know HLS. Pure: built from a parsed manifest and its URL; the
/// proxy fetches the pieces and remuxes them.
///
/// The rules, as the seed gives them:
/// - the adaptation sets are picked by `Role@main`, by codecs the proxy can carry in MPEG-2 TS (H.264 video; AAC,
///   AC-3, E-AC-3 audio) and, for audio, by the languages wanted;
/// - the first period's representations are assumed in every period (matched by `@id`, else by bandwidth rank);
/// - the top-level playlist has one `EXT-X-STREAM-INF` (BANDWIDTH, `PROGRAM-ID=1`, CODECS and RESOLUTION where
///   known) per video representation, even if there is one;
/// - a media playlist has one `EXTINF` per segment, rounded up to whole seconds; `EXT-X-TARGETDURATION` is the
///   largest; `EXT-X-DISCONTINUITY` precedes each later period's first segment;
/// - each HLS segment is exactly one video and one audio DASH segment (the n-th of each in its period);
/// - a static MPD ends every playlist, the top-level one too, with `EXT-X-ENDLIST`; a dynamic one ends none, its
///   media playlists are made again from a reloaded MPD, and `EXT-X-MEDIA-SEQUENCE` follows the segment numbers.
public struct HLSTranscript: Sendable {
    /// A byte source of one DASH segment: a URL (an asset path under ``assetScheme``) and a byte range of it.
    public struct Piece: Sendable, Hashable {
        /// Where the bytes are.
        public var url: URL
        /// The bytes of `url` it is, when not all of it.
        public var range: ClosedRange<Int64>?
    }

    /// One track's part of an HLS segment: the DASH init segment and media segment.
    public struct TrackPiece: Sendable, Equatable {
        /// The init segment (nil: the media segment carries its own `moov`).
        public var initialization: Piece?
        /// The media segment.
        public var media: Piece
        /// For a Smooth Streaming fragment (no init segment): how to read it.
        public var smooth: SmoothFragment? = nil
    }

    /// How a Smooth Streaming fragment is read: its quality level (codec setup), stream type, time and protection.
    public struct SmoothFragment: Sendable, Equatable {
        /// The quality level it belongs to.
        public var quality: SmoothManifest.QualityLevel
        /// The stream's `Type` ("video", "audio").
        public var kind: String
        /// Ticks per second of `time`.
        public var timescale: UInt64
        /// Its start time (the decode time of its first sample when it has no 'tfdt').
        public var time: UInt64
        /// True when the manifest declares protection (PIFF / CENC `cenc`, 8-byte IVs unless the fragment says otherwise).
        public var isProtected: Bool
        /// The key ID the PlayReady header names (nil: the license's only key).
        public var keyID: KeyID?
    }

    /// One HLS segment.
    public struct Segment: Sendable, Equatable {
        /// Its file name in the variant's folder (stable across reloads of a dynamic MPD).
        public var name: String
        /// Its media sequence number.
        public var sequence: UInt64
        /// Its duration in seconds, as the MPD gives it.
        public var duration: Double
        /// True for the first segment of a period after the first.
        public var discontinuity: Bool
        /// The video part.
        public var video: TrackPiece?
        /// The audio part: the audio segment that starts with the video one (the segments of a period's end
        /// that start inside the last video segment all go with it).
        public var audio: [TrackPiece]
    }

    /// One variant stream: a video representation with the chosen audio.
    public struct Variant: Sendable, Equatable {
        /// Peak bits per second, video and audio.
        public var bandwidth: Int
        /// CODECS, when the MPD names them.
        public var codecs: String?
        /// RESOLUTION ("1280x720"), when known.
        public var resolution: String?
        /// The segments, in order.
        public var segments: [Segment]
    }

    /// The URL scheme of a file inside the asset (`satchel-asset:///path/in/asset`).
    public static let assetScheme = "satchel-asset"
    /// The folder of the transcribed playlists and segments in a session's paths.
    public static let folder = ".hls"
    /// The top-level playlist's path in a session.
    public static let masterPath = folder + "/master.m3u8"
    /// At most this many segments per representation.
    public static let segmentLimit = 100_000

    /// The variant streams, by ascending bandwidth.
    public let variants: [Variant]
    /// True for a dynamic (live) MPD.
    public let isDynamic: Bool
    /// True when a chosen adaptation set declares content protection.
    public let isProtected: Bool
    /// The `sidx` boxes of SegmentBase representations that were not given: fetch them and transcribe again with
    /// them (until then each such representation is one segment, the whole file).
    public let missingIndexes: [Piece]

    /// Transcribes `manifest`, fetched from `url` (for an asset on disk, ``assetURL(_:)`` of its path); audio in
    /// one of `languages` is preferred; `indexes` are the SegmentBase representations' `sidx` boxes, by where
    /// they are (``missingIndexes`` names them).
    public init(manifest: DASHManifest, url: URL, languages: [String] = [], indexes: [Piece: SegmentIndex] = [:]) throws(StreamError) {
        isDynamic = manifest.type == "dynamic"
        guard let first = manifest.periods.first else { throw .invalidContent("the MPD has no period") }
        let firstChoice = DASHTranscription.choose(first.adaptationSets, languages: languages)
        guard firstChoice.video != nil || firstChoice.audio != nil else {
            throw .invalidContent("the MPD has no H.264 video or AAC / AC-3 / E-AC-3 audio to carry in HLS")
        }
        let chosenVideo = firstChoice.video.map { DASHTranscription.ranked(first.adaptationSets[$0]) } ?? []
        var protected = false
        var missing: [Piece] = []
        var variants: [Variant] = (chosenVideo.isEmpty ? [nil] : chosenVideo.map { Optional($0) }).map { video in
            let audio = firstChoice.audio.flatMap { DASHTranscription.ranked(first.adaptationSets[$0]).last }
            let bandwidth = (video?.bandwidth ?? 0) + (audio?.bandwidth ?? 0)
            let codecs = [video?.codecs, audio?.codecs].compactMap { $0 }
            let resolution = video.flatMap { rep in rep.width.flatMap { w in rep.height.map { "\(w)x\($0)" } } }
            return Variant(bandwidth: bandwidth, codecs: codecs.isEmpty ? nil : codecs.joined(separator: ","), resolution: resolution, segments: [])
        }
        let mpdBase = try DASHTranscription.resolve(manifest.baseURL, against: url)
        var sequence: UInt64?
        for (periodIndex, period) in manifest.periods.enumerated() {
            let choice = DASHTranscription.choose(period.adaptationSets, languages: languages)
            let periodBase = try DASHTranscription.resolve(period.baseURL, against: mpdBase)
            let periodDuration = manifest.duration(ofPeriod: periodIndex)
            let audioSet = choice.audio.map { period.adaptationSets[$0] }
            let audioRep = audioSet.flatMap { DASHTranscription.ranked($0).last }
            let audio = try audioRep.map { (rep) throws(StreamError) in
                try DASHTranscription.pieces(rep, set: audioSet, base: periodBase, periodDuration: periodDuration, period: periodIndex, indexes: indexes, missing: &missing)
            }
            let videoSet = choice.video.map { period.adaptationSets[$0] }
            let videoReps = videoSet.map(DASHTranscription.ranked) ?? []
            for index in variants.indices {
                // The first period's representation, found again by id, else by its bandwidth rank.
                let wanted = chosenVideo.indices.contains(index) ? chosenVideo[index] : nil
                let rep = wanted.flatMap { w in videoReps.first { $0.id == w.id } } ?? (videoReps.isEmpty ? nil : videoReps[min(index, videoReps.count - 1)])
                let video = try rep.map { (rep) throws(StreamError) in
                    try DASHTranscription.pieces(rep, set: videoSet, base: periodBase, periodDuration: periodDuration, period: periodIndex, indexes: indexes, missing: &missing)
                }
                protected = protected || !(videoSet?.contentProtection.isEmpty ?? true) || !(audioSet?.contentProtection.isEmpty ?? true)
                // The timeline of the HLS segments is the video's; each audio segment goes with the video segment
                // it starts in (one each when they are aligned, as seed 002 has it).
                let lead = video ?? audio ?? []
                let audioPieces = video != nil ? audio ?? [] : []
                let paired = DASHTranscription.paired(lead.map(\.start), audioPieces.map(\.start)).map { $0.map { audioPieces[$0].piece } }
                if sequence == nil { sequence = isDynamic ? lead.first?.number ?? 0 : 0 }
                var next = (sequence ?? 0) &+ UInt64(variants[index].segments.count)
                for (position, segment) in lead.enumerated() {
                    variants[index].segments.append(Segment(
                        name: "p\(periodIndex)-\(segment.time).ts", sequence: next, duration: segment.duration,
                        discontinuity: periodIndex > 0 && position == 0,
                        video: video != nil ? segment.piece : nil, audio: video != nil ? paired[position] : [segment.piece]))
                    next &+= 1
                }
            }
        }
        guard variants.allSatisfy({ !$0.segments.isEmpty }) else { throw .invalidContent("the MPD lists no segments") }
        self.variants = variants.sorted { $0.bandwidth < $1.bandwidth }
        self.isProtected = protected
        var seen = Set<Piece>()
        self.missingIndexes = missing.filter { seen.insert($0).inserted }
    }


    /// A transcript made elsewhere (a Smooth Streaming manifest's).
    init(variants: [Variant], isDynamic: Bool, isProtected: Bool, missingIndexes: [Piece]) {
        self.variants = variants
        self.isDynamic = isDynamic
        self.isProtected = isProtected
        self.missingIndexes = missingIndexes
    }

    /// The URL of a file of an asset on disk.
    public static func assetURL(_ path: String) -> URL {
        var components = URLComponents()
        components.scheme = assetScheme
        components.host = ""
        components.path = "/" + path
        return components.url ?? URL(fileURLWithPath: "/")
    }

    /// The top-level playlist.
    public func masterPlaylist() -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:3"]
        for (index, variant) in variants.enumerated() {
            var attributes = ["PROGRAM-ID=1", "BANDWIDTH=\(max(variant.bandwidth, 1))"]
            if let codecs = variant.codecs { attributes.append("CODECS=\"\(codecs)\"") }
            if let resolution = variant.resolution { attributes.append("RESOLUTION=\(resolution)") }
            lines.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            lines.append("v\(index).m3u8")
        }
        if !isDynamic { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The media playlist of variant `index` (nil when there is no such variant).
    public func mediaPlaylist(_ index: Int) -> String? {
        guard variants.indices.contains(index) else { return nil }
        let segments = variants[index].segments
        let whole = segments.map { Self.wholeSeconds($0.duration) }
        var lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:\(whole.max() ?? 1)",
                     "#EXT-X-MEDIA-SEQUENCE:\(segments.first?.sequence ?? 0)"]
        if !isDynamic { lines.append("#EXT-X-PLAYLIST-TYPE:VOD") }
        for (segment, seconds) in zip(segments, whole) {
            if segment.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            lines.append("#EXTINF:\(seconds),")
            lines.append("v\(index)/\(segment.name)")
        }
        if !isDynamic { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// What a session path under ``folder`` names: a media playlist's variant, or a segment.
    public enum Resource: Sendable, Equatable {
        case master
        case playlist(Int)
        case segment(Segment)
    }

    /// The resource at `path` (a path in the session, `.hls/…`), if any.
    public func resource(_ path: String) -> Resource? {
        guard path.hasPrefix(Self.folder + "/") else { return nil }
        let rest = path.dropFirst(Self.folder.count + 1)
        if rest == "master.m3u8" { return .master }
        let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
        guard let head = parts.first, head.hasPrefix("v") else { return nil }
        if parts.count == 1, head.hasSuffix(".m3u8"), let index = Int(head.dropFirst().dropLast(5)), variants.indices.contains(index) {
            return .playlist(index)
        }
        guard parts.count == 2, let index = Int(head.dropFirst()), variants.indices.contains(index),
              let segment = variants[index].segments.first(where: { $0.name == parts[1] }) else { return nil }
        return .segment(segment)
    }

    /// Seconds rounded up to a whole number (at least 1: a player divides by it).
    static func wholeSeconds(_ seconds: Double) -> Int {
        guard seconds.isFinite, seconds > 0 else { return 1 }
        return max(Int(min(seconds, 86_400).rounded(.up)), 1)
    }
}

extension HLSTranscript {
    /// True when `text` is a DASH MPD (not an HLS playlist).
    public static func isMPD(_ text: String) -> Bool {
        let head = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }.prefix(4096)
        return !head.hasPrefix("#EXTM3U") && head.contains("<MPD")
    }

    /// Parses and transcribes the MPD `text` fetched from `url`.
    public init(mpd text: String, url: URL, languages: [String] = [], indexes: [Piece: SegmentIndex] = [:]) throws(StreamError) {
        let manifest: DASHManifest
        do { manifest = try DASHManifest(parsing: text) } catch { throw .invalidContent("the MPD does not parse: \(error)") }
        try self.init(manifest: manifest, url: url, languages: languages, indexes: indexes)
    }

    /// Parses and transcribes the manifest `text` fetched from `url`: a Smooth Streaming manifest, else an MPD.
    public init(manifest text: String, url: URL, languages: [String] = [], indexes: [Piece: SegmentIndex] = [:]) throws(StreamError) {
        guard Self.isSmooth(text) else {
            try self.init(mpd: text, url: url, languages: languages, indexes: indexes)
            return
        }
        let manifest: SmoothManifest
        do { manifest = try SmoothManifest(parsing: text) } catch { throw .invalidContent("the Smooth manifest does not parse: \(error)") }
        try self.init(smooth: manifest, url: url, languages: languages)
    }

    /// True when the manifest `text` (an MPD, or a Smooth Streaming manifest) declares content protection.
    public static func declaresProtection(_ text: String) -> Bool {
        if isSmooth(text) { return (try? SmoothManifest(parsing: text))?.protectionHeader != nil }
        guard let manifest = try? DASHManifest(parsing: text) else { return false }
        return manifest.periods.contains { $0.adaptationSets.contains { !$0.contentProtection.isEmpty } }
    }
}
