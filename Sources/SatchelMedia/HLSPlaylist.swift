/// An EXT-X-KEY or EXT-X-SESSION-KEY.
public struct HLSKey: Sendable, Equatable {
    /// NONE, AES-128, SAMPLE-AES or SAMPLE-AES-CTR.
    public var method: String
    /// The key URI (skd://…, https://…, data:…).
    public var uri: String?
    /// The IV as written (0x…), if any.
    public var iv: String?
    /// KEYFORMAT ("identity", "com.apple.streamingkeydelivery", …).
    public var keyFormat: String?
    /// KEYFORMATVERSIONS.
    public var keyFormatVersions: String?
    /// KEYID (0x…), as Widevine's tags write the key ID, if any.
    public var keyID: String?

    /// Creates a key tag.
    public init(method: String, uri: String? = nil, iv: String? = nil, keyFormat: String? = nil, keyFormatVersions: String? = nil,
                keyID: String? = nil) {
        self.method = method
        self.uri = uri
        self.iv = iv
        self.keyFormat = keyFormat
        self.keyFormatVersions = keyFormatVersions
        self.keyID = keyID
    }

    /// True when `uri` can be a key tag's quoted URI: RFC 8216 §4.2 forbids a double quote, CR and LF in a
    /// quoted string, and no other control character belongs in a URI either (one would let a value write a tag of its own).
    public static func isWritableURI(_ uri: String) -> Bool {
        !uri.isEmpty && !uri.unicodeScalars.contains { $0 == "\"" || $0.value < 0x20 || $0.value == 0x7F }
    }

    init(_ attributes: HLSAttributes) {
        self.init(method: attributes["METHOD"] ?? "NONE", uri: attributes["URI"], iv: attributes["IV"],
                  keyFormat: attributes["KEYFORMAT"], keyFormatVersions: attributes["KEYFORMATVERSIONS"], keyID: attributes["KEYID"])
    }

    /// The tag as a media playlist writes it (`#EXT-X-KEY:…`), or a master playlist (`#EXT-X-SESSION-KEY:…`).
    public func line(session: Bool = false) -> String {
        (session ? "#EXT-X-SESSION-KEY:" : "#EXT-X-KEY:") + attributes.text
    }

    var attributes: HLSAttributes {
        var a = HLSAttributes()
        a.add("METHOD", method)
        a.add("URI", uri, quoted: true)
        a.add("IV", iv)
        a.add("KEYID", keyID)
        a.add("KEYFORMAT", keyFormat, quoted: true)
        a.add("KEYFORMATVERSIONS", keyFormatVersions, quoted: true)
        return a
    }
}

/// A byte range of a segment or map (EXT-X-BYTERANGE).
public struct HLSByteRange: Sendable, Equatable {
    /// Length in bytes.
    public var length: Int
    /// Start offset; nil means "after the previous range".
    public var offset: Int?

    /// Creates a byte range.
    public init(length: Int, offset: Int?) {
        self.length = length
        self.offset = offset
    }

    init?(_ text: String) {
        let parts = text.split(separator: "@")
        guard let length = parts.first.flatMap({ Int($0) }), length >= 0 else { return nil }
        self.length = length
        self.offset = parts.count > 1 ? Int(parts[1]) : nil
    }

    var text: String { offset.map { "\(length)@\($0)" } ?? "\(length)" }
}

/// One media segment.
public struct HLSSegment: Sendable, Equatable {
    /// Duration in seconds.
    public var duration: Double
    /// The segment URI.
    public var uri: String
    /// Byte range within the URI.
    public var byteRange: HLSByteRange?
    /// Keys in force for this segment (the EXT-X-KEY tags that precede it); empty = unchanged.
    public var keys: [HLSKey]
    /// The EXT-X-MAP in force, if it changed here.
    public var map: HLSMap?
    /// A discontinuity precedes this segment.
    public var discontinuity: Bool

    /// Creates a segment.
    public init(duration: Double, uri: String, byteRange: HLSByteRange? = nil, keys: [HLSKey] = [], map: HLSMap? = nil, discontinuity: Bool = false) {
        self.duration = duration
        self.uri = uri
        self.byteRange = byteRange
        self.keys = keys
        self.map = map
        self.discontinuity = discontinuity
    }
}

/// EXT-X-MAP: the init segment of fMP4 media.
public struct HLSMap: Sendable, Equatable {
    /// The init segment URI.
    public var uri: String
    /// Byte range within the URI.
    public var byteRange: HLSByteRange?

    /// Creates a map.
    public init(uri: String, byteRange: HLSByteRange? = nil) {
        self.uri = uri
        self.byteRange = byteRange
    }
}

/// A media playlist.
public struct HLSMediaPlaylist: Sendable, Equatable {
    /// EXT-X-VERSION.
    public var version: Int
    /// EXT-X-TARGETDURATION.
    public var targetDuration: Int
    /// EXT-X-MEDIA-SEQUENCE.
    public var mediaSequence: Int
    /// EXT-X-PLAYLIST-TYPE (VOD, EVENT) if present.
    public var playlistType: String?
    /// EXT-X-INDEPENDENT-SEGMENTS.
    public var independentSegments: Bool
    /// EXT-X-ENDLIST: the playlist is complete (not live).
    public var endList: Bool
    /// The segments in order.
    public var segments: [HLSSegment]

    /// Creates a media playlist.
    public init(version: Int = 6, targetDuration: Int, mediaSequence: Int = 0, playlistType: String? = "VOD",
                independentSegments: Bool = true, endList: Bool = true, segments: [HLSSegment]) {
        self.version = version
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.playlistType = playlistType
        self.independentSegments = independentSegments
        self.endList = endList
        self.segments = segments
    }

    /// The playlist text.
    public var text: String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-TARGETDURATION:\(targetDuration)",
                     "#EXT-X-MEDIA-SEQUENCE:\(mediaSequence)"]
        if let playlistType { lines.append("#EXT-X-PLAYLIST-TYPE:\(playlistType)") }
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        for segment in segments {
            if segment.discontinuity { lines.append("#EXT-X-DISCONTINUITY") }
            for key in segment.keys { lines.append(key.line()) }
            if let map = segment.map {
                var a = HLSAttributes()
                a.add("URI", map.uri, quoted: true)
                a.add("BYTERANGE", map.byteRange?.text, quoted: true)
                lines.append("#EXT-X-MAP:\(a.text)")
            }
            lines.append("#EXTINF:\(formatDuration(segment.duration)),")
            if let range = segment.byteRange { lines.append("#EXT-X-BYTERANGE:\(range.text)") }
            lines.append(segment.uri)
        }
        if endList { lines.append("#EXT-X-ENDLIST") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses a media playlist.
    public init(parsing text: String) throws(MediaError) {
        let lines = try HLSLines(text)
        version = 1
        targetDuration = 0
        mediaSequence = 0
        playlistType = nil
        independentSegments = false
        endList = false
        segments = []
        var pendingKeys: [HLSKey] = []
        var pendingMap: HLSMap?
        var pendingDuration: Double?
        var pendingRange: HLSByteRange?
        var discontinuity = false
        for line in lines.lines {
            if let value = line.value("#EXT-X-VERSION:") { version = Int(value) ?? version }
            else if let value = line.value("#EXT-X-TARGETDURATION:") {
                guard let target = Int(value) else { throw .malformed("EXT-X-TARGETDURATION \(value)") }
                targetDuration = target
            }
            else if let value = line.value("#EXT-X-MEDIA-SEQUENCE:") { mediaSequence = Int(value) ?? 0 }
            else if let value = line.value("#EXT-X-PLAYLIST-TYPE:") { playlistType = String(value) }
            else if line == "#EXT-X-INDEPENDENT-SEGMENTS" { independentSegments = true }
            else if line == "#EXT-X-ENDLIST" { endList = true }
            else if line == "#EXT-X-DISCONTINUITY" { discontinuity = true }
            else if let value = line.value("#EXT-X-KEY:") { pendingKeys.append(HLSKey(HLSAttributes(parsing: value))) }
            else if let value = line.value("#EXT-X-MAP:") {
                let a = HLSAttributes(parsing: value)
                guard let uri = a["URI"] else { throw .malformed("EXT-X-MAP without URI") }
                pendingMap = HLSMap(uri: uri, byteRange: a["BYTERANGE"].flatMap(HLSByteRange.init))
            }
            else if let value = line.value("#EXTINF:") {
                guard let duration = Double(value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""),
                      duration >= 0, duration.isFinite else { throw .malformed("EXTINF \(value)") }
                pendingDuration = duration
            }
            else if let value = line.value("#EXT-X-BYTERANGE:") {
                guard let range = HLSByteRange(String(value)) else { throw .malformed("EXT-X-BYTERANGE \(value)") }
                pendingRange = range
            }
            else if !line.hasPrefix("#") {
                guard let duration = pendingDuration else { throw .malformed("segment \(line) has no EXTINF") }
                segments.append(HLSSegment(duration: duration, uri: String(line), byteRange: pendingRange, keys: pendingKeys,
                                           map: pendingMap, discontinuity: discontinuity))
                pendingKeys = []
                pendingMap = nil
                pendingDuration = nil
                pendingRange = nil
                discontinuity = false
            }
        }
    }
}

/// The non-empty lines of a playlist, checked to start with #EXTM3U.
struct HLSLines {
    let lines: [Substring]

    init(_ text: String) throws(MediaError) {
        lines = text.split(whereSeparator: \.isNewline).map { $0.drop { $0 == " " || $0 == "\t" } }.filter { !$0.isEmpty }
        guard lines.first?.hasPrefix("#EXTM3U") == true else { throw .malformed("not an HLS playlist (no #EXTM3U)") }
    }
}

extension Substring {
    /// The text after `prefix`, when the line starts with it.
    func value(_ prefix: String) -> Substring? { hasPrefix(prefix) ? dropFirst(prefix.count) : nil }
}

/// Seconds with up to six decimals and no trailing zeros ("6.006", "4").
func formatDuration(_ value: Double) -> String { formatDecimal(value, places: 6) }

func formatDecimal(_ value: Double, places: Int) -> String {
    var scale = 1.0
    for _ in 0..<places { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    var text = String(rounded)
    if text.hasSuffix(".0") { text.removeLast(2) }
    return text
}
