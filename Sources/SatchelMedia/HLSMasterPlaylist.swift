/// An alternative rendition (EXT-X-MEDIA).
public struct HLSRendition: Sendable, Equatable {
    /// AUDIO, VIDEO, SUBTITLES or CLOSED-CAPTIONS.
    public var type: String
    /// GROUP-ID.
    public var groupID: String
    /// NAME.
    public var name: String
    /// LANGUAGE.
    public var language: String?
    /// DEFAULT=YES.
    public var isDefault: Bool
    /// AUTOSELECT=YES.
    public var autoselect: Bool
    /// CHANNELS.
    public var channels: String?
    /// The media playlist URI.
    public var uri: String?

    /// Creates a rendition.
    public init(type: String, groupID: String, name: String, language: String? = nil, isDefault: Bool = false,
                autoselect: Bool = true, channels: String? = nil, uri: String?) {
        self.type = type
        self.groupID = groupID
        self.name = name
        self.language = language
        self.isDefault = isDefault
        self.autoselect = autoselect
        self.channels = channels
        self.uri = uri
    }
}

/// A variant stream (EXT-X-STREAM-INF).
public struct HLSVariant: Sendable, Equatable {
    /// BANDWIDTH (peak bits per second).
    public var bandwidth: Int
    /// AVERAGE-BANDWIDTH.
    public var averageBandwidth: Int?
    /// CODECS.
    public var codecs: String?
    /// RESOLUTION as width and height.
    public var resolution: (width: Int, height: Int)?
    /// FRAME-RATE.
    public var frameRate: Double?
    /// AUDIO group.
    public var audioGroup: String?
    /// SUBTITLES group.
    public var subtitlesGroup: String?
    /// The media playlist URI.
    public var uri: String

    /// Creates a variant.
    public init(bandwidth: Int, averageBandwidth: Int? = nil, codecs: String? = nil, resolution: (width: Int, height: Int)? = nil,
                frameRate: Double? = nil, audioGroup: String? = nil, subtitlesGroup: String? = nil, uri: String) {
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.codecs = codecs
        self.resolution = resolution
        self.frameRate = frameRate
        self.audioGroup = audioGroup
        self.subtitlesGroup = subtitlesGroup
        self.uri = uri
    }

    public static func == (lhs: HLSVariant, rhs: HLSVariant) -> Bool {
        lhs.bandwidth == rhs.bandwidth && lhs.averageBandwidth == rhs.averageBandwidth && lhs.codecs == rhs.codecs
            && lhs.resolution?.width == rhs.resolution?.width && lhs.resolution?.height == rhs.resolution?.height
            && lhs.frameRate == rhs.frameRate && lhs.audioGroup == rhs.audioGroup && lhs.subtitlesGroup == rhs.subtitlesGroup
            && lhs.uri == rhs.uri
    }
}

/// A master (multivariant) playlist.
public struct HLSMasterPlaylist: Sendable, Equatable {
    /// EXT-X-VERSION.
    public var version: Int
    /// EXT-X-INDEPENDENT-SEGMENTS.
    public var independentSegments: Bool
    /// EXT-X-SESSION-KEY tags (offline FairPlay preloads them).
    public var sessionKeys: [HLSKey]
    /// EXT-X-MEDIA renditions.
    public var renditions: [HLSRendition]
    /// EXT-X-STREAM-INF variants.
    public var variants: [HLSVariant]

    /// Creates a master playlist.
    public init(version: Int = 6, independentSegments: Bool = true, sessionKeys: [HLSKey] = [], renditions: [HLSRendition] = [],
                variants: [HLSVariant]) {
        self.version = version
        self.independentSegments = independentSegments
        self.sessionKeys = sessionKeys
        self.renditions = renditions
        self.variants = variants
    }

    /// True when `text` is a master playlist rather than a media playlist.
    public static func isMaster(_ text: String) -> Bool { text.contains("#EXT-X-STREAM-INF") }

    /// The playlist text.
    public var text: String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:\(version)"]
        if independentSegments { lines.append("#EXT-X-INDEPENDENT-SEGMENTS") }
        for key in sessionKeys { lines.append(key.line(session: true)) }
        for r in renditions {
            var a = HLSAttributes()
            a.add("TYPE", r.type)
            a.add("GROUP-ID", r.groupID, quoted: true)
            a.add("NAME", r.name, quoted: true)
            a.add("LANGUAGE", r.language, quoted: true)
            a.add("DEFAULT", r.isDefault ? "YES" : "NO")
            a.add("AUTOSELECT", r.autoselect ? "YES" : "NO")
            a.add("CHANNELS", r.channels, quoted: true)
            a.add("URI", r.uri, quoted: true)
            lines.append("#EXT-X-MEDIA:\(a.text)")
        }
        for v in variants {
            var a = HLSAttributes()
            a.add("BANDWIDTH", String(v.bandwidth))
            a.add("AVERAGE-BANDWIDTH", v.averageBandwidth.map(String.init))
            a.add("CODECS", v.codecs, quoted: true)
            a.add("RESOLUTION", v.resolution.map { "\($0.width)x\($0.height)" })
            a.add("FRAME-RATE", v.frameRate.map { formatDecimal($0, places: 3) })
            a.add("AUDIO", v.audioGroup, quoted: true)
            a.add("SUBTITLES", v.subtitlesGroup, quoted: true)
            lines.append("#EXT-X-STREAM-INF:\(a.text)")
            lines.append(v.uri)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Parses a master playlist.
    public init(parsing text: String) throws(MediaError) {
        let lines = try HLSLines(text)
        version = 1
        independentSegments = false
        sessionKeys = []
        renditions = []
        variants = []
        var pending: HLSAttributes?
        for line in lines.lines {
            if let value = line.value("#EXT-X-VERSION:") { version = Int(value) ?? version }
            else if line == "#EXT-X-INDEPENDENT-SEGMENTS" { independentSegments = true }
            else if let value = line.value("#EXT-X-SESSION-KEY:") { sessionKeys.append(HLSKey(HLSAttributes(parsing: value))) }
            else if let value = line.value("#EXT-X-MEDIA:") {
                let a = HLSAttributes(parsing: value)
                guard let type = a["TYPE"], let group = a["GROUP-ID"] else { throw .malformed("EXT-X-MEDIA without TYPE or GROUP-ID") }
                renditions.append(HLSRendition(type: type, groupID: group, name: a["NAME"] ?? group, language: a["LANGUAGE"],
                                               isDefault: a["DEFAULT"] == "YES", autoselect: a["AUTOSELECT"] == "YES",
                                               channels: a["CHANNELS"], uri: a["URI"]))
            }
            else if let value = line.value("#EXT-X-STREAM-INF:") { pending = HLSAttributes(parsing: value) }
            else if !line.hasPrefix("#"), let a = pending {
                guard let bandwidth = a["BANDWIDTH"].flatMap({ Int($0) }) else { throw .malformed("EXT-X-STREAM-INF without BANDWIDTH") }
                let resolution = a["RESOLUTION"].flatMap { text -> (Int, Int)? in
                    let parts = text.split(separator: "x").compactMap { Int($0) }
                    return parts.count == 2 ? (parts[0], parts[1]) : nil
                }
                variants.append(HLSVariant(bandwidth: bandwidth, averageBandwidth: a["AVERAGE-BANDWIDTH"].flatMap { Int($0) },
                                           codecs: a["CODECS"], resolution: resolution, frameRate: a["FRAME-RATE"].flatMap { Double($0) },
                                           audioGroup: a["AUDIO"], subtitlesGroup: a["SUBTITLES"], uri: String(line)))
                pending = nil
            }
        }
    }
}
