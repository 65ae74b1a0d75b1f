import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection

/// How one media segment is protected, as its playlist says.
public struct SegmentProtection: Sendable, Equatable {
    /// How the key tag protects it.
    public var method: EncryptionMethod
    /// The key's URI as written.
    public var keyURI: String?
    /// The IV: the key tag's, or the segment's media sequence number (HLS's rule for AES-128).
    public var iv: [UInt8]
    /// True when the key tag wrote the IV (SAMPLE-AES without one takes the license's).
    public var ivFromTag: Bool
    /// The segment's init segment (`EXT-X-MAP`), a path in the asset's folder.
    public var map: String?
}

/// What the proxy knows of a downloaded HLS asset: its playlists and, for each protected media segment, the
/// key that protects it. Pure: the files are read through a closure.
public struct HLSAssetMap: Sendable {
    /// The playlists reachable from the entry (paths in the asset's folder).
    public var playlists: Set<String>
    /// Protected media segments by path; a segment not listed is clear.
    public var segments: [String: SegmentProtection]
    /// Every media segment and init segment the playlists list (downloaded or not).
    public var listed: Set<String> = []
    /// The init segments of protected segments (their sample entries are protected too).
    public var protectedInitSegments: Set<String> = []
    /// Each media segment's init segment (`EXT-X-MAP`), protected or not.
    public var initSegmentOf: [String: String] = [:]
    /// Each media segment's playlist and media sequence number (a rendition's segments follow each other in it).
    public var position: [String: (playlist: String, sequence: Int64)] = [:]
    /// At most this many playlists are followed.
    public static let maximumPlaylists = 500

    /// A map of `playlists` with `segments` protected (more is added as media playlists are read).
    public init(playlists: Set<String>, segments: [String: SegmentProtection]) {
        self.playlists = playlists
        self.segments = segments
    }

    /// True when any segment is protected.
    public var isProtected: Bool { !segments.isEmpty }

    /// Reads the entry playlist and every media playlist it names.
    public static func build(entry: String, read: (String) throws(StreamError) -> String) throws(StreamError) -> HLSAssetMap {
        var map = HLSAssetMap(playlists: [entry], segments: [:])
        let text = try read(entry)
        var media: [String] = []
        if HLSMasterPlaylist.isMaster(text) {
            _ = HLSRewriter.rewrite(text) { (reference: HLSURIReference) -> HLSURIDecision in
                switch reference.site {
                case .variant, .tag("EXT-X-MEDIA"), .tag("EXT-X-I-FRAME-STREAM-INF"):
                    if let path = resolve(reference.uri, from: entry), !media.contains(path) { media.append(path) }
                default: break
                }
                return .keep
            }
            guard media.count <= maximumPlaylists else { throw .invalidContent("more than \(maximumPlaylists) playlists") }
            for path in media {
                map.playlists.insert(path)
                try map.add(mediaPlaylist: read(path), at: path)
            }
        } else {
            try map.add(mediaPlaylist: text, at: entry)
        }
        return map
    }

    private mutating func add(mediaPlaylist text: String, at path: String) throws(StreamError) {
        let playlist: HLSMediaPlaylist
        do { playlist = try HLSMediaPlaylist(parsing: text) } catch { throw .invalidContent("\(path): \(error)") }
        var key: HLSKey?
        var initSegment: String?
        for (index, segment) in playlist.segments.enumerated() {
            if !segment.keys.isEmpty { key = Self.key(of: segment.keys) }
            if let declared = segment.map { initSegment = Self.resolve(declared.uri, from: path) }
            if let initSegment { listed.insert(initSegment) }
            if let segmentPath = Self.resolve(segment.uri, from: path) {
                listed.insert(segmentPath)
                if position[segmentPath] == nil {
                    position[segmentPath] = (path, Int64(clamping: playlist.mediaSequence).addingReportingOverflow(Int64(index)).partialValue)
                }
                if let initSegment { initSegmentOf[segmentPath] = initSegment }
            }
            guard let key, let segmentPath = Self.resolve(segment.uri, from: path), segments[segmentPath] == nil else { continue }
            let iv: [UInt8]
            if let written = key.iv {
                guard let parsed = Self.iv(written) else { throw .invalidContent("\(path): the IV \(written.prefix(40)) is not 16 bytes of hex") }
                iv = parsed
            } else {
                let (sequence, overflow) = UInt64(clamping: max(0, playlist.mediaSequence)).addingReportingOverflow(UInt64(index))
                guard !overflow else { throw .invalidContent("\(path): the media sequence overflows") }
                iv = SegmentCipher.sequenceIV(sequence)
            }
            if let initSegment { protectedInitSegments.insert(initSegment) }
            segments[segmentPath] = SegmentProtection(method: EncryptionMethod(tag: key.method), keyURI: key.uri, iv: iv, ivFromTag: key.iv != nil, map: initSegment)
        }
    }

    /// The tag that says how a segment is protected, of the several a multi-DRM package writes for one key
    /// (FairPlay's, identity's, Widevine's, PlayReady's): the one that writes the IV tells the most; a system
    /// Satchel does not fetch keys for (Widevine, PlayReady, any other) gives the method alone, its URI (the
    /// system's own data) no key to fetch.
    static func key(of tags: [HLSKey]) -> HLSKey? {
        let protected = tags.filter { $0.method != "NONE" }
        let usable = protected.filter { DRMSystem(hlsKeyFormat: $0.keyFormat).map { [.clearKey, .fairPlay].contains($0) } ?? false }
        if let chosen = usable.first(where: { $0.iv != nil }) ?? usable.first { return chosen }
        return protected.first.map { HLSKey(method: $0.method, iv: $0.iv) }
    }

    /// The init segments no key tag protects: their own sample entries may still say they are (a CMAF package
    /// whose playlists carry no key tag, as a packager writes for raw keys).
    public var unsignalledInitSegments: Set<String> { Set(initSegmentOf.values).subtracting(protectedInitSegments) }

    /// Marks every segment of `initSegment` protected with `scheme`, as its sample entries say (`cbcs` is
    /// SAMPLE-AES, `cenc` SAMPLE-AES-CTR), when no key tag did.
    public mutating func markProtected(initSegment: String, scheme: CommonEncryption.Scheme) {
        protectedInitSegments.insert(initSegment)
        for (segment, map) in initSegmentOf where map == initSegment && segments[segment] == nil {
            segments[segment] = SegmentProtection(method: scheme == .cbcs ? .sampleAES : .sampleAESCTR, keyURI: nil,
                                                  iv: [UInt8](repeating: 0, count: 16), ivFromTag: false, map: initSegment)
        }
    }

    /// A playlist without its key tags (`EXT-X-KEY`, `EXT-X-SESSION-KEY`): what a player without DRM is given
    /// once the proxy decrypts. Every other line stays byte for byte.
    public static func clearPlaylist(_ text: String) -> String {
        let rewritten = HLSRewriter.rewrite(text) { (reference: HLSURIReference) -> HLSURIDecision in
            switch reference.site {
            case .tag("EXT-X-KEY"), .tag("EXT-X-SESSION-KEY"): return .remove
            default: return .keep
            }
        }
        // Key tags without a URI (METHOD=NONE) say nothing a clear stream needs either.
        return rewritten.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("#EXT-X-KEY:METHOD=NONE") }.joined(separator: "\n")
    }

    /// `uri` seen from the playlist at `from`, as a path in the asset's folder; nil for an absolute URL or a
    /// path that would leave the folder.
    public static func resolve(_ uri: String, from: String) -> String? {
        guard !uri.contains("://"), !uri.hasPrefix("/"), !uri.hasPrefix("data:") else { return nil }
        let withoutQuery = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? uri
        let decoded = withoutQuery.removingPercentEncoding ?? withoutQuery
        var parts = from.split(separator: "/").dropLast().map(String.init)
        for component in decoded.split(separator: "/", omittingEmptySubsequences: false) {
            switch component {
            case ".": continue
            case "..":
                guard !parts.isEmpty else { return nil }
                parts.removeLast()
            case "": return nil
            default: parts.append(String(component))
            }
        }
        let path = parts.joined(separator: "/")
        return path.isEmpty || path.utf8.contains(0) ? nil : path
    }

    static func iv(_ text: String) -> [UInt8]? {
        let hex = text.hasPrefix("0x") || text.hasPrefix("0X") ? String(text.dropFirst(2)) : text
        return try? Hex.decode(hex, count: 16)
    }
}
