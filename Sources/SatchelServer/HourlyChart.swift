import Foundation
import SatchelMedia

/// A bar chart of counts per hour, stacked by series, drawn as SVG on the server: the dashboard's charts read
/// without any script. Every text it writes is XML-escaped.
struct HourlyChart: Sendable {
    /// One stacked series: its name (legend, tooltips), its CSS class (colour) and one count per hour.
    struct Series: Sendable {
        var name: String
        var cssClass: String
        var counts: [Int]
    }

    /// The start of each hour shown, oldest first.
    let hours: [Date]
    let series: [Series]

    /// The last `count` whole hours up to `now` (the current hour last).
    static func hours(endingAt now: Date, count: Int) -> [Date] {
        let current = (now.timeIntervalSince1970 / 3600).rounded(.down) * 3600
        return (0..<max(count, 1)).reversed().map { Date(timeIntervalSince1970: current - Double($0) * 3600) }
    }

    /// Counts `dates` into `hours` (a date outside them is not counted).
    static func counts(of dates: [Date], in hours: [Date]) -> [Int] {
        guard let first = hours.first else { return [] }
        var counts = Array(repeating: 0, count: hours.count)
        for date in dates {
            let slot = (date.timeIntervalSince(first) / 3600).rounded(.down)  // any date: compared before it becomes an index
            if slot >= 0, slot < Double(counts.count) { counts[Int(slot)] += 1 }
        }
        return counts
    }

    /// The total of every series.
    var total: Int { series.reduce(0) { $0 + $1.counts.reduce(0, +) } }

    /// The chart as an `<svg>` element (`label` is its accessible name).
    func svg(label: String) -> String {
        let width = 720.0, height = 200.0, left = 36.0, bottom = 22.0, top = 8.0
        let plotHeight = height - bottom - top, slot = (width - left) / Double(max(hours.count, 1))
        let stacked = hours.indices.map { index in series.reduce(0) { $0 + (index < $1.counts.count ? $1.counts[index] : 0) } }
        let scale = Self.niceCeiling(stacked.max() ?? 0)
        var out = "<svg class=\"chart\" viewBox=\"0 0 \(Int(width)) \(Int(height))\" role=\"img\" aria-label=\"\(xmlEscape(label))\">"
        for step in 0...2 {
            let value = String(format: "%g", Double(scale) * Double(step) / 2), y = top + plotHeight - plotHeight * Double(step) / 2
            out += "<line class=\"grid\" x1=\"\(left)\" x2=\"\(width)\" y1=\"\(y)\" y2=\"\(y)\"/>"
            out += "<text class=\"axis\" x=\"\(left - 6)\" y=\"\(y + 4)\" text-anchor=\"end\">\(value)</text>"
        }
        for (index, hour) in hours.enumerated() {
            let x = left + Double(index) * slot + slot * 0.15, barWidth = slot * 0.7
            var base = top + plotHeight
            var parts: [String] = []
            for one in series where index < one.counts.count && one.counts[index] > 0 {
                let barHeight = plotHeight * Double(one.counts[index]) / Double(scale)
                base -= barHeight
                out += "<rect class=\"\(xmlEscape(one.cssClass))\" x=\"\(Self.short(x))\" y=\"\(Self.short(base))\" width=\"\(Self.short(barWidth))\" height=\"\(Self.short(barHeight))\" rx=\"2\"/>"
                parts.append("\(one.counts[index]) \(one.name)")
            }
            let clock = Self.hourLabel(hour)
            // A transparent column over the whole slot carries the hour's tooltip.
            out += "<rect class=\"hit\" x=\"\(Self.short(left + Double(index) * slot))\" y=\"\(top)\" width=\"\(Self.short(slot))\" height=\"\(plotHeight)\">"
                + "<title>\(xmlEscape(clock + " UTC — " + (parts.isEmpty ? "none" : parts.joined(separator: ", "))))</title></rect>"
            if index % 6 == 0 || index == hours.count - 1 {
                out += "<text class=\"axis\" x=\"\(Self.short(x + barWidth / 2))\" y=\"\(height - 6)\" text-anchor=\"middle\">\(clock)</text>"
            }
        }
        return out + "</svg>"
    }

    /// 2, 5, 10, 20, 50, … at or above `value` (at least 2, so the middle line is a whole number too).
    static func niceCeiling(_ value: Int) -> Int {
        var magnitude = 1
        while true {
            for step in [1, 2, 5] where step * magnitude >= max(value, 2) { return step * magnitude }
            guard magnitude <= Int.max / 100 else { return Int.max }
            magnitude *= 10
        }
    }

    static func hourLabel(_ date: Date) -> String {
        let hour = Int((date.timeIntervalSince1970 / 3600).rounded(.down)) % 24
        return (hour < 10 ? "0" : "") + "\(hour):00"
    }

    private static func short(_ value: Double) -> String {
        String(format: "%.1f", value)
    }
}
