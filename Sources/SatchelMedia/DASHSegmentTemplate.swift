import Foundation

/// A DASH segment template ($Number$ / $Time$ with an optional SegmentTimeline).
public struct DASHSegmentTemplate: Sendable, Equatable {
    /// Ticks per second.
    public var timescale: UInt64
    /// The init segment template.
    public var initialization: String?
    /// The media segment template.
    public var media: String?
    /// First $Number$.
    public var startNumber: UInt64
    /// Segment duration in ticks without a timeline.
    public var duration: UInt64?
    /// Timeline entries: start time (nil = continue), duration, repeat count.
    public var timeline: [(t: UInt64?, d: UInt64, r: Int)]

    /// Creates a template.
    public init(timescale: UInt64, initialization: String?, media: String?, startNumber: UInt64 = 1, duration: UInt64? = nil,
                timeline: [(t: UInt64?, d: UInt64, r: Int)] = []) {
        self.timescale = timescale
        self.initialization = initialization
        self.media = media
        self.startNumber = startNumber
        self.duration = duration
        self.timeline = timeline
    }

    public static func == (lhs: DASHSegmentTemplate, rhs: DASHSegmentTemplate) -> Bool {
        lhs.timescale == rhs.timescale && lhs.initialization == rhs.initialization && lhs.media == rhs.media
            && lhs.startNumber == rhs.startNumber && lhs.duration == rhs.duration
            && lhs.timeline.elementsEqual(rhs.timeline) { $0.t == $1.t && $0.d == $1.d && $0.r == $1.r }
    }

    /// Media segments as (number, start time, duration), expanding the timeline (an `r` of -1 repeats up to
    /// the next `S@t` or the end of the presentation) or, without one, dividing `presentationDuration` seconds
    /// into fixed durations. Every sum is checked: a number, time or count that does not fit, or more than
    /// `limit` segments, is a `MediaError` and the work stops there (no input can make it loop or trap).
    public func segments(presentationDuration: Double?, limit: Int = 1_000_000) throws(MediaError) -> [(number: UInt64, time: UInt64, duration: UInt64)] {
        var out: [(number: UInt64, time: UInt64, duration: UInt64)] = []
        let limit = max(limit, 0)
        func append(_ time: UInt64, _ duration: UInt64) throws(MediaError) {
            guard out.count < limit else { throw .malformed("more than \(limit) segments in one representation") }
            let (number, overflow) = startNumber.addingReportingOverflow(UInt64(out.count))
            guard !overflow else { throw .malformed("segment numbers from startNumber \(startNumber) overflow") }
            out.append((number, time, duration))
        }
        guard timescale > 0 else { throw .malformed("timescale must be positive") }
        let endTicks = try presentationDuration.map { (seconds) throws(MediaError) -> UInt64 in try Self.ticks(seconds, timescale: timescale) }
        if !timeline.isEmpty {
            var time: UInt64 = 0
            for (index, entry) in timeline.enumerated() {
                if let t = entry.t { time = t }
                guard entry.d > 0 else { throw .malformed("SegmentTimeline S@d must be positive") }
                let count: UInt64
                if entry.r >= 0 {
                    count = UInt64(entry.r) + 1
                } else {
                    // r = -1: repeat until the next S@t, else the end of the presentation.
                    let next = index + 1 < timeline.count ? timeline[index + 1].t : nil
                    guard let end = next ?? endTicks, end > time else { throw .malformed("S@r=-1 needs a following S@t or a presentation duration") }
                    count = (end - time) / entry.d + ((end - time) % entry.d == 0 ? 0 : 1)
                }
                guard count <= UInt64(limit - out.count) else { throw .malformed("more than \(limit) segments in one representation") }
                for _ in 0..<count {
                    try append(time, entry.d)
                    let (sum, overflow) = time.addingReportingOverflow(entry.d)
                    guard !overflow else { throw .malformed("SegmentTimeline times overflow") }
                    time = sum
                }
            }
        } else if let duration, duration > 0, let endTicks {
            let count = endTicks / duration + (endTicks % duration == 0 ? 0 : 1)
            guard count <= UInt64(limit) else { throw .malformed("more than \(limit) segments in one representation") }
            for index in 0..<count {
                let (time, overflow) = index.multipliedReportingOverflow(by: duration)
                guard !overflow else { throw .malformed("segment times overflow") }
                try append(time, duration)
            }
        }
        return out
    }

    /// `seconds` in ticks of `timescale`, refused when not finite, negative or too large to count.
    static func ticks(_ seconds: Double, timescale: UInt64) throws(MediaError) -> UInt64 {
        let ticks = (seconds * Double(timescale)).rounded(.up)
        guard ticks.isFinite, ticks >= 0, ticks < 0x1p63 else { throw .malformed("duration \(seconds) s at timescale \(timescale) is out of range") }
        return UInt64(ticks)
    }

    /// Widest `%0Nd` accepted in a template (a real one needs at most 20 digits).
    public static let maxFormatWidth = 32

    /// Expands $RepresentationID$, $Bandwidth$, $Number$ and $Time$ (with %0Nd widths) in `template`.
    /// A width above ``maxFormatWidth`` is refused.
    public static func expand(_ template: String, representationID: String, bandwidth: Int, number: UInt64?, time: UInt64?) throws(MediaError) -> String {
        var out = ""
        var rest = Substring(template)
        while let start = rest.firstIndex(of: "$") {
            out += rest[..<start]
            let afterStart = rest.index(after: start)
            guard let end = rest[afterStart...].firstIndex(of: "$") else { out += rest[start...]; return out }
            let token = rest[afterStart..<end]
            let parts = token.split(separator: "%", maxSplits: 1)
            let name = parts.first.map(String.init) ?? ""
            var width = 0
            if parts.count > 1 {
                let format = parts[1]
                guard format.first == "0", format.last == "d", let value = Int(format.dropFirst().dropLast()), (0...maxFormatWidth).contains(value) else {
                    throw .malformed("template format %\(format.prefix(16)) (only %0Nd up to \(maxFormatWidth) digits)")
                }
                width = value
            }
            func padded(_ value: UInt64) -> String {
                let digits = String(value)
                return String(repeating: "0", count: max(width - digits.count, 0)) + digits
            }
            switch name {
            case "": out += "$"
            case "RepresentationID": out += representationID
            case "Bandwidth": out += padded(UInt64(max(bandwidth, 0)))
            case "Number": out += number.map(padded) ?? ""
            case "Time": out += time.map(padded) ?? ""
            default: out += "$\(token)$"
            }
            rest = rest[rest.index(after: end)...]
        }
        return out + rest
    }
}
