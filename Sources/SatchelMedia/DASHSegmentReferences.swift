/// One media segment of a DASH representation: where it is (relative to the representation's base URL) and when.
public struct DASHMediaSegment: Sendable, Equatable {
    /// The reference as the MPD gives it after template expansion ("" = the base URL itself).
    public var uri: String
    /// A byte range of it ("first-last"), for SegmentList `mediaRange`.
    public var range: String?
    /// The segment number ($Number$, or its position counted from `startNumber`).
    public var number: UInt64
    /// Its start, in ticks of the representation's timescale.
    public var time: UInt64
    /// Its start in seconds from the period's start.
    public var start: Double
    /// Its duration in seconds.
    public var duration: Double

    /// Creates a media segment reference.
    public init(uri: String, range: String? = nil, number: UInt64, time: UInt64, start: Double, duration: Double) {
        self.uri = uri
        self.range = range
        self.number = number
        self.time = time
        self.start = start
        self.duration = duration
    }
}

/// A representation's segments: its init segment (when it has one) and its media segments in order.
public struct DASHSegmentReferences: Sendable, Equatable {
    /// The init segment's reference and byte range.
    public var initialization: (uri: String, range: String?)?
    /// The media segments.
    public var media: [DASHMediaSegment]
    /// SegmentBase: the whole file is one segment whose index (`sidx`) lies in this byte range.
    public var indexRange: String?

    public static func == (lhs: DASHSegmentReferences, rhs: DASHSegmentReferences) -> Bool {
        lhs.initialization?.uri == rhs.initialization?.uri && lhs.initialization?.range == rhs.initialization?.range
            && lhs.media == rhs.media && lhs.indexRange == rhs.indexRange
    }
}

extension DASHRepresentation {
    /// Its segments, from its SegmentTemplate ($Number$ / $Time$, with or without a timeline), SegmentList, or
    /// SegmentBase / bare BaseURL (one segment: the whole file). `periodDuration` bounds a template without a
    /// timeline (and a timeline's open `r=-1`); at most `limit` segments.
    public func segmentReferences(periodDuration: Double?, limit: Int = 1_000_000) throws(MediaError) -> DASHSegmentReferences {
        if let template = segmentTemplate, let media = template.media {
            let initialization = try template.initialization.map { (name) throws(MediaError) in
                (uri: try DASHSegmentTemplate.expand(name, representationID: id, bandwidth: bandwidth, number: nil, time: nil), range: String?.none)
            }
            var out: [DASHMediaSegment] = []
            for segment in try template.segments(presentationDuration: periodDuration, limit: limit) {
                let uri = try DASHSegmentTemplate.expand(media, representationID: id, bandwidth: bandwidth, number: segment.number, time: segment.time)
                out.append(DASHMediaSegment(uri: uri, number: segment.number, time: segment.time,
                                            start: Double(segment.time) / Double(template.timescale),
                                            duration: Double(segment.duration) / Double(template.timescale)))
            }
            return DASHSegmentReferences(initialization: initialization, media: out)
        }
        if let list = segmentList {
            guard list.segments.count <= limit else { throw .malformed("more than \(limit) segments in one representation") }
            guard list.timescale > 0 else { throw .malformed("SegmentList timescale must be positive") }
            let each = list.duration.map { Double($0) / Double(list.timescale) } ?? (periodDuration ?? 0) / Double(max(list.segments.count, 1))
            guard each.isFinite, each > 0 else { throw .malformed("SegmentList without a segment duration") }
            var out: [DASHMediaSegment] = []
            for (index, segment) in list.segments.enumerated() {
                let (time, overflow) = UInt64(index).multipliedReportingOverflow(by: list.duration ?? 0)
                guard !overflow else { throw .malformed("SegmentList times overflow") }
                out.append(DASHMediaSegment(uri: segment.url ?? "", range: segment.range, number: UInt64(index) + 1, time: time,
                                            start: Double(index) * each, duration: each))
            }
            let initialization = list.initialization != nil || list.initializationRange != nil
                ? (uri: list.initialization ?? "", range: list.initializationRange) : nil
            return DASHSegmentReferences(initialization: initialization, media: out)
        }
        // SegmentBase or a bare BaseURL: one file holding the init segment, its index and every fragment.
        let whole = DASHMediaSegment(uri: "", number: 1, time: 0, start: 0, duration: periodDuration ?? 0)
        return DASHSegmentReferences(initialization: segmentBase?.initializationRange.map { ("", $0) }, media: [whole],
                                     indexRange: segmentBase?.indexRange)
    }
}
