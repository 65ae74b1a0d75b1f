import Foundation

/// A DASH ContentProtection element.
public struct DASHContentProtection: Sendable, Equatable {
    /// schemeIdUri.
    public var schemeIDURI: String
    /// value ("cenc", "cbcs").
    public var value: String?
    /// cenc:default_KID as written.
    public var defaultKID: String?
    /// cenc:pssh (base64), if present.
    public var pssh: String?
    /// mspr:pro (base64): a PlayReady Object, if present.
    public var playReadyObject: String?

    /// Creates a ContentProtection element.
    public init(schemeIDURI: String, value: String? = nil, defaultKID: String? = nil, pssh: String? = nil, playReadyObject: String? = nil) {
        self.schemeIDURI = schemeIDURI
        self.value = value
        self.defaultKID = defaultKID
        self.pssh = pssh
        self.playReadyObject = playReadyObject
    }
}

/// A DASH Representation.
public struct DASHRepresentation: Sendable, Equatable {
    /// Its `@id`.
    public var id: String
    /// Its `@bandwidth`, bits per second.
    public var bandwidth: Int
    /// Its `@codecs` (RFC 6381), when given here or on its adaptation set.
    public var codecs: String?
    /// Its `@mimeType`, when given.
    public var mimeType: String?
    /// Its picture width, when given.
    public var width: Int?
    /// Its picture height, when given.
    public var height: Int?
    /// Its `@frameRate` as written (`25`, `30000/1001`).
    public var frameRate: String?
    /// Its audio sampling rate, when given.
    public var audioSamplingRate: Int?
    /// Its audio channels (`AudioChannelConfiguration`), when given.
    public var audioChannels: Int?
    /// Its `BaseURL`, when given.
    public var baseURL: String?
    /// Its `SegmentTemplate` (its own, else inherited from its adaptation set).
    public var segmentTemplate: DASHSegmentTemplate?
    /// SegmentList: the init URL, media URLs with optional byte ranges, the segment duration in `timescale` ticks,
    /// and the init segment's byte range (`Initialization@range`; without a `sourceURL` it is a range of BaseURL).
    public var segmentList: (initialization: String?, segments: [(url: String?, range: String?)], duration: UInt64?, timescale: UInt64,
                             initializationRange: String?)?
    /// SegmentBase: indexRange and initialization range within BaseURL.
    public var segmentBase: (indexRange: String?, initializationRange: String?)?

    /// Creates a representation.
    public init(id: String, bandwidth: Int, codecs: String? = nil, mimeType: String? = nil, width: Int? = nil, height: Int? = nil,
                frameRate: String? = nil, audioSamplingRate: Int? = nil, audioChannels: Int? = nil, baseURL: String? = nil,
                segmentTemplate: DASHSegmentTemplate? = nil) {
        self.id = id
        self.bandwidth = bandwidth
        self.codecs = codecs
        self.mimeType = mimeType
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.audioSamplingRate = audioSamplingRate
        self.audioChannels = audioChannels
        self.baseURL = baseURL
        self.segmentTemplate = segmentTemplate
    }

    public static func == (lhs: DASHRepresentation, rhs: DASHRepresentation) -> Bool {
        lhs.id == rhs.id && lhs.bandwidth == rhs.bandwidth && lhs.codecs == rhs.codecs && lhs.mimeType == rhs.mimeType
            && lhs.width == rhs.width && lhs.height == rhs.height && lhs.baseURL == rhs.baseURL && lhs.segmentTemplate == rhs.segmentTemplate
    }
}

/// A DASH AdaptationSet.
public struct DASHAdaptationSet: Sendable, Equatable {
    /// Its `@contentType` (`video`, `audio`, `text`), when given.
    public var contentType: String?
    /// Its `@mimeType`, when given.
    public var mimeType: String?
    /// Its `@lang` (BCP 47), when given.
    public var language: String?
    /// Its `ContentProtection` elements (schemes, default KID, `pssh`).
    public var contentProtection: [DASHContentProtection]
    /// Its `SegmentTemplate`, shared by its representations unless they have their own.
    public var segmentTemplate: DASHSegmentTemplate?
    /// Its representations, in document order.
    public var representations: [DASHRepresentation]
    /// The values of its `Role` elements ("main", "alternate", "commentary", …).
    public var roles: [String] = []
    /// The set's BaseURL.
    public var baseURL: String?

    /// Creates an adaptation set.
    public init(contentType: String?, mimeType: String?, language: String? = nil, contentProtection: [DASHContentProtection] = [],
                segmentTemplate: DASHSegmentTemplate? = nil, representations: [DASHRepresentation]) {
        self.contentType = contentType
        self.mimeType = mimeType
        self.language = language
        self.contentProtection = contentProtection
        self.segmentTemplate = segmentTemplate
        self.representations = representations
    }

    /// "video", "audio" or "text", from contentType or mimeType.
    public var kind: String {
        contentType ?? (mimeType ?? representations.first?.mimeType ?? "").split(separator: "/").first.map(String.init) ?? ""
    }
}

/// A DASH Period: a span of the presentation with its own adaptation sets.
public struct DASHPeriod: Sendable, Equatable {
    /// `@id`, when given.
    public var id: String?
    /// `@start` in seconds, when given.
    public var start: Double?
    /// `@duration` in seconds, when given.
    public var duration: Double?
    /// The period's BaseURL.
    public var baseURL: String?
    /// The period's adaptation sets.
    public var adaptationSets: [DASHAdaptationSet]

    /// Creates a period.
    public init(id: String? = nil, start: Double? = nil, duration: Double? = nil, baseURL: String? = nil, adaptationSets: [DASHAdaptationSet]) {
        self.id = id
        self.start = start
        self.duration = duration
        self.baseURL = baseURL
        self.adaptationSets = adaptationSets
    }
}

/// A DASH media presentation description (static or dynamic).
public struct DASHManifest: Sendable, Equatable {
    /// "static" (on demand) or "dynamic" (live).
    public var type: String
    /// mediaPresentationDuration in seconds.
    public var duration: Double?
    /// MPD-level BaseURL.
    public var baseURL: String?
    /// Adaptation sets of the first period (what a one-period writer and reader need).
    public var adaptationSets: [DASHAdaptationSet]
    /// Every period, in document order.
    public var periods: [DASHPeriod]

    /// Creates a one-period manifest.
    public init(type: String = "static", duration: Double?, baseURL: String? = nil, adaptationSets: [DASHAdaptationSet]) {
        self.type = type
        self.duration = duration
        self.baseURL = baseURL
        self.adaptationSets = adaptationSets
        self.periods = [DASHPeriod(adaptationSets: adaptationSets)]
    }

    /// The duration in seconds of period `index`: its `@duration`, else up to the next period's `@start`, else
    /// (the last period) up to the end of the presentation; nil when the MPD does not say.
    public func duration(ofPeriod index: Int) -> Double? {
        guard periods.indices.contains(index) else { return nil }
        if let duration = periods[index].duration { return duration }
        let start = startOfPeriod(index)
        let end = index + 1 < periods.count ? periods[index + 1].start : duration
        guard let start, let end, end > start else { return index == 0 && periods.count == 1 ? duration : nil }
        return end - start
    }

    /// The start in seconds of period `index`: its `@start`, else the end of the one before (the first starts at 0).
    public func startOfPeriod(_ index: Int) -> Double? {
        guard periods.indices.contains(index) else { return nil }
        var start = 0.0
        for position in 0...index {
            if let given = periods[position].start {
                start = given
            } else if position > 0 {
                guard let previous = periods[position - 1].duration else { return nil }
                start += previous
            }
        }
        return start
    }

    /// Parses an MPD.
    public init(parsing text: String) throws(MediaError) {
        let root = try MarkupElement.parse(text)
        guard root.name == "MPD" else { throw .malformed("not a DASH MPD (root element \(root.name))") }
        type = root.attributes["type"] ?? "static"
        duration = root.attributes["mediaPresentationDuration"].flatMap(Self.parseDuration)
        baseURL = root.child("BaseURL")?.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let periodElements = root.children("Period")
        guard let first = periodElements.first else { throw .malformed("MPD has no Period") }
        if duration == nil, periodElements.count == 1 { duration = first.attributes["duration"].flatMap(Self.parseDuration) }
        periods = periodElements.map { period in
            DASHPeriod(id: period.attributes["id"], start: period.attributes["start"].flatMap(Self.parseDuration),
                       duration: period.attributes["duration"].flatMap(Self.parseDuration),
                       baseURL: period.child("BaseURL")?.text.trimmingCharacters(in: .whitespacesAndNewlines),
                       adaptationSets: Self.adaptationSets(of: period))
        }
        adaptationSets = periods.first?.adaptationSets ?? []
        if duration == nil, periods.count > 1, let last = periods.indices.last, let start = startOfPeriod(last), let length = periods[last].duration {
            duration = start + length
        }
    }

    private static func adaptationSets(of period: MarkupElement) -> [DASHAdaptationSet] {
        period.children("AdaptationSet").map { set in
            let setTemplate = set.child("SegmentTemplate").map(Self.template)
            var adaptationSet = DASHAdaptationSet(
                contentType: set.attributes["contentType"], mimeType: set.attributes["mimeType"], language: set.attributes["lang"],
                contentProtection: set.children("ContentProtection").map(Self.protection),
                segmentTemplate: setTemplate,
                representations: set.children("Representation").map { rep in
                    var r = DASHRepresentation(
                        id: rep.attributes["id"] ?? "", bandwidth: rep.attributes["bandwidth"].flatMap { Int($0) } ?? 0,
                        codecs: rep.attributes["codecs"] ?? set.attributes["codecs"], mimeType: rep.attributes["mimeType"] ?? set.attributes["mimeType"],
                        width: rep.attributes["width"].flatMap { Int($0) }, height: rep.attributes["height"].flatMap { Int($0) },
                        frameRate: rep.attributes["frameRate"] ?? set.attributes["frameRate"],
                        audioSamplingRate: (rep.attributes["audioSamplingRate"] ?? set.attributes["audioSamplingRate"]).flatMap { Int($0) },
                        audioChannels: (rep.child("AudioChannelConfiguration") ?? set.child("AudioChannelConfiguration"))?.attributes["value"].flatMap { Int($0) },
                        baseURL: rep.child("BaseURL")?.text.trimmingCharacters(in: .whitespacesAndNewlines),
                        segmentTemplate: rep.child("SegmentTemplate").map(Self.template) ?? setTemplate)
                    if let list = rep.child("SegmentList") ?? set.child("SegmentList") {
                        r.segmentList = (list.child("Initialization")?.attributes["sourceURL"],
                                         list.children("SegmentURL").map { ($0.attributes["media"], $0.attributes["mediaRange"]) },
                                         list.attributes["duration"].flatMap { UInt64($0) },
                                         list.attributes["timescale"].flatMap { UInt64($0) } ?? 1,
                                         list.child("Initialization")?.attributes["range"])
                    }
                    if let base = rep.child("SegmentBase") ?? set.child("SegmentBase") {
                        r.segmentBase = (base.attributes["indexRange"], base.child("Initialization")?.attributes["range"])
                    }
                    return r
                })
            adaptationSet.roles = set.children("Role").compactMap { $0.attributes["value"] }
            adaptationSet.baseURL = set.child("BaseURL")?.text.trimmingCharacters(in: .whitespacesAndNewlines)
            return adaptationSet
        }
    }

    private static func template(_ element: MarkupElement) -> DASHSegmentTemplate {
        let timeline = element.child("SegmentTimeline")?.children("S").compactMap { s -> (t: UInt64?, d: UInt64, r: Int)? in
            guard let d = s.attributes["d"].flatMap({ UInt64($0) }) else { return nil }
            return (s.attributes["t"].flatMap { UInt64($0) }, d, s.attributes["r"].flatMap { Int($0) } ?? 0)
        } ?? []
        return DASHSegmentTemplate(timescale: element.attributes["timescale"].flatMap { UInt64($0) } ?? 1,
                                   initialization: element.attributes["initialization"], media: element.attributes["media"],
                                   startNumber: element.attributes["startNumber"].flatMap { UInt64($0) } ?? 1,
                                   duration: element.attributes["duration"].flatMap { UInt64($0) }, timeline: timeline)
    }

    private static func protection(_ element: MarkupElement) -> DASHContentProtection {
        DASHContentProtection(schemeIDURI: element.attributes["schemeIdUri"] ?? "", value: element.attributes["value"],
                              defaultKID: element.attributes["default_KID"],
                              pssh: element.child("pssh")?.text.trimmingCharacters(in: .whitespacesAndNewlines),
                              playReadyObject: element.child("pro")?.text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Parses an ISO 8601 duration such as PT1H2M3.5S into seconds.
    public static func parseDuration(_ text: String) -> Double? {
        guard text.hasPrefix("P") else { return nil }
        var seconds = 0.0, number = "", inTime = false
        for char in text.dropFirst() {
            switch char {
            case "T": inTime = true
            case "0"..."9", ".": number.append(char)
            default:
                guard let value = Double(number) else { return nil }
                switch (char, inTime) {
                case ("D", false): seconds += value * 86_400
                case ("H", true): seconds += value * 3_600
                case ("M", true): seconds += value * 60
                case ("S", true): seconds += value
                default: return nil
                }
                number = ""
            }
        }
        return number.isEmpty ? seconds : nil
    }

    /// The MPD text (static, one period).
    public var text: String {
        var lines = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>"]
        let playReady = adaptationSets.contains { $0.contentProtection.contains { $0.playReadyObject != nil } }
        var mpd = "<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\" xmlns:cenc=\"urn:mpeg:cenc:2013\""
            + (playReady ? " xmlns:mspr=\"urn:microsoft:playready\"" : "") + " profiles=\"urn:mpeg:dash:profile:isoff-live:2011\" type=\"\(type)\" minBufferTime=\"PT2S\""
        if let duration { mpd += " mediaPresentationDuration=\"PT\(formatDecimal(duration, places: 3))S\"" }
        lines.append(mpd + ">")
        if let baseURL { lines.append("  <BaseURL>\(xmlEscape(baseURL))</BaseURL>") }
        lines.append("  <Period id=\"0\" start=\"PT0S\">")
        for (index, set) in adaptationSets.enumerated() {
            var open = "    <AdaptationSet id=\"\(index)\""
            if let contentType = set.contentType { open += " contentType=\"\(contentType)\"" }
            if let mimeType = set.mimeType { open += " mimeType=\"\(mimeType)\"" }
            if let language = set.language { open += " lang=\"\(xmlEscape(language))\"" }
            lines.append(open + " segmentAlignment=\"true\" startWithSAP=\"1\">")
            for cp in set.contentProtection {
                var element = "      <ContentProtection schemeIdUri=\"\(cp.schemeIDURI)\""
                if let value = cp.value { element += " value=\"\(value)\"" }
                if let kid = cp.defaultKID { element += " cenc:default_KID=\"\(kid)\"" }
                if cp.pssh != nil || cp.playReadyObject != nil {
                    lines.append(element + ">")
                    if let pssh = cp.pssh { lines.append("        <cenc:pssh>\(pssh)</cenc:pssh>") }
                    if let pro = cp.playReadyObject { lines.append("        <mspr:pro>\(pro)</mspr:pro>") }
                    lines.append("      </ContentProtection>")
                } else {
                    lines.append(element + "/>")
                }
            }
            for rep in set.representations {
                var element = "      <Representation id=\"\(xmlEscape(rep.id))\" bandwidth=\"\(rep.bandwidth)\""
                if let mimeType = rep.mimeType, mimeType != set.mimeType { element += " mimeType=\"\(mimeType)\"" }
                if let codecs = rep.codecs { element += " codecs=\"\(codecs)\"" }
                if let width = rep.width, let height = rep.height { element += " width=\"\(width)\" height=\"\(height)\"" }
                if let frameRate = rep.frameRate { element += " frameRate=\"\(frameRate)\"" }
                if let rate = rep.audioSamplingRate { element += " audioSamplingRate=\"\(rate)\"" }
                lines.append(element + ">")
                if let channels = rep.audioChannels {
                    lines.append("        <AudioChannelConfiguration schemeIdUri=\"urn:mpeg:dash:23003:3:audio_channel_configuration:2011\" value=\"\(channels)\"/>")
                }
                if let baseURL = rep.baseURL { lines.append("        <BaseURL>\(xmlEscape(baseURL))</BaseURL>") }
                if let base = rep.segmentBase {
                    let index = base.indexRange.map { " indexRange=\"\($0)\"" } ?? ""
                    if let range = base.initializationRange {
                        lines.append("        <SegmentBase\(index)>")
                        lines.append("          <Initialization range=\"\(range)\"/>")
                        lines.append("        </SegmentBase>")
                    } else {
                        lines.append("        <SegmentBase\(index)/>")
                    }
                }
                if let list = rep.segmentList {
                    lines.append("        <SegmentList timescale=\"\(list.timescale)\"" + (list.duration.map { " duration=\"\($0)\"" } ?? "") + ">")
                    if let initialization = list.initialization { lines.append("          <Initialization sourceURL=\"\(xmlEscape(initialization))\"/>") }
                    for segment in list.segments {
                        lines.append("          <SegmentURL" + (segment.url.map { " media=\"\(xmlEscape($0))\"" } ?? "")
                            + (segment.range.map { " mediaRange=\"\($0)\"" } ?? "") + "/>")
                    }
                    lines.append("        </SegmentList>")
                }
                if let t = rep.segmentTemplate {
                    var template = "        <SegmentTemplate timescale=\"\(t.timescale)\" startNumber=\"\(t.startNumber)\""
                    if let initialization = t.initialization { template += " initialization=\"\(xmlEscape(initialization))\"" }
                    if let media = t.media { template += " media=\"\(xmlEscape(media))\"" }
                    if let duration = t.duration { template += " duration=\"\(duration)\"" }
                    if t.timeline.isEmpty {
                        lines.append(template + "/>")
                    } else {
                        lines.append(template + ">")
                        lines.append("          <SegmentTimeline>")
                        for s in t.timeline {
                            lines.append("            <S" + (s.t.map { " t=\"\($0)\"" } ?? "") + " d=\"\(s.d)\"" + (s.r > 0 ? " r=\"\(s.r)\"" : "") + "/>")
                        }
                        lines.append("          </SegmentTimeline>")
                        lines.append("        </SegmentTemplate>")
                    }
                }
                lines.append("      </Representation>")
            }
            lines.append("    </AdaptationSet>")
        }
        lines.append("  </Period>")
        lines.append("</MPD>")
        return lines.joined(separator: "\n") + "\n"
    }
}
