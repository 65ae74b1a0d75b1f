/// One URI of an HLS playlist, as ``HLSRewriter`` shows it to its caller.
public struct HLSURIReference: Sendable {
    /// Where the URI stands.
    public enum Site: Sendable, Equatable {
        /// The URI line after `#EXT-X-STREAM-INF` (a variant of a master playlist).
        case variant
        /// A media segment's URI line.
        case segment
        /// `URI=` of a tag: `EXT-X-MEDIA`, `EXT-X-I-FRAME-STREAM-INF`, `EXT-X-KEY`, `EXT-X-SESSION-KEY`, `EXT-X-MAP`,
        /// `EXT-X-SESSION-DATA` or any other tag (named without the `#`).
        case tag(String)
    }

    /// Where it stands.
    public var site: Site
    /// The URI as written.
    public var uri: String
    /// The attributes of its tag (of `EXT-X-STREAM-INF` for a variant; empty for a segment).
    public var attributes: HLSAttributes
    /// For segments, and maps (the segment they apply to next): the segment's number in the playlist, from 0.
    public var segmentIndex: Int?
    /// A segment's `EXT-X-BYTERANGE`, or a map's `BYTERANGE`.
    public var byteRange: HLSByteRange?
}

/// What to do with one URI.
public struct HLSURIDecision: Sendable, Equatable {
    /// The new URI (nil: unchanged).
    public var uri: String?
    /// Remove the whole entry: the URI line with its `EXT-X-STREAM-INF` / `EXTINF` / `EXT-X-BYTERANGE` lines, or the tag line.
    public var remove: Bool
    /// Drop the entry's byte range (it became a file of its own).
    public var dropByteRange: Bool
    /// Attributes to take out of the entry's tag (e.g. a variant's `SUBTITLES` when no subtitle rendition remains).
    public var removeAttributes: Set<String>

    /// Leave the URI as it is.
    public static let keep = HLSURIDecision(uri: nil, remove: false, dropByteRange: false, removeAttributes: [])
    /// Remove the entry whole.
    public static let remove = HLSURIDecision(uri: nil, remove: true, dropByteRange: false, removeAttributes: [])

    /// Point the entry at `uri`.
    public static func replace(_ uri: String, dropByteRange: Bool = false, removeAttributes: Set<String> = []) -> HLSURIDecision {
        HLSURIDecision(uri: uri, remove: false, dropByteRange: dropByteRange, removeAttributes: removeAttributes)
    }
}

/// Rewrites the URIs of an HLS master or media playlist and nothing else: every other line, tag, attribute
/// and comment stays byte for byte, in order (`EXT-X-PROGRAM-DATE-TIME`, `EXT-X-DATERANGE`, `EXT-X-START`,
/// vendor tags, blank lines, CR LF endings). The caller decides per URI: keep, replace, or remove the entry.
public enum HLSRewriter {
    /// The playlist with `decide`'s answer applied to every URI, in document order.
    public static func rewrite<Failure: Error>(_ text: String,
                                               _ decide: (HLSURIReference) throws(Failure) -> HLSURIDecision) throws(Failure) -> String {
        var output: [Substring] = []
        output.reserveCapacity(text.utf8.count / 24)
        var entry: [Int] = []  // output lines of the entry being read: EXT-X-STREAM-INF, EXTINF, EXT-X-BYTERANGE
        var byteRangeLine: Int?
        var streamInf: HLSAttributes?
        var byteRange: HLSByteRange?
        var segmentIndex = 0
        var dropped = Set<Int>()

        // Split on the byte 0x0A: Swift joins "\r\n" into one Character, which a Character split would never cut.
        for scalars in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = Substring(scalars)
            let content = line.hasSuffix("\r") ? line.dropLast() : line
            if content.hasPrefix("#") {
                guard content.hasPrefix("#EXT") else {
                    output.append(line)  // a comment
                    continue
                }
                let name = tagName(content)
                switch name {
                case "EXT-X-STREAM-INF":
                    streamInf = HLSAttributes(parsing: attributeText(content))
                    entry.append(output.count)
                    output.append(line)
                case "EXTINF":
                    entry.append(output.count)
                    output.append(line)
                case "EXT-X-BYTERANGE":
                    byteRange = HLSByteRange(parsing: attributeText(content))
                    byteRangeLine = output.count
                    entry.append(output.count)
                    output.append(line)
                default:
                    guard let uriRange = quotedValue(of: "URI", in: content) else {
                        output.append(line)
                        continue
                    }
                    let attributes = HLSAttributes(parsing: attributeText(content))
                    let mapRange = name == "EXT-X-MAP" ? attributes["BYTERANGE"].flatMap { HLSByteRange(parsing: Substring($0)) } : nil
                    let reference = HLSURIReference(site: .tag(name), uri: String(content[uriRange]), attributes: attributes,
                                                    segmentIndex: name == "EXT-X-MAP" ? segmentIndex : nil, byteRange: mapRange)
                    let decision = try decide(reference)
                    if decision.remove { continue }
                    output.append(Substring(edited(line, uriRange: uriRange, decision: decision)))
                }
                continue
            }
            if content.allSatisfy({ $0 == " " || $0 == "\t" }) {
                output.append(line)
                continue
            }
            let isVariant = streamInf != nil
            let reference = HLSURIReference(site: isVariant ? .variant : .segment,
                                            uri: String(content.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed()),
                                            attributes: streamInf ?? HLSAttributes(), segmentIndex: isVariant ? nil : segmentIndex,
                                            byteRange: isVariant ? nil : byteRange)
            let decision = try decide(reference)
            if decision.remove {
                dropped.formUnion(entry)
            } else {
                if decision.dropByteRange, let byteRangeLine { dropped.insert(byteRangeLine) }
                if !decision.removeAttributes.isEmpty, isVariant, let tagLine = entry.first(where: { output[$0].hasPrefix("#EXT-X-STREAM-INF") }) {
                    output[tagLine] = Substring(removing(decision.removeAttributes, from: output[tagLine]))
                }
                let ending = line.hasSuffix("\r") ? "\r" : ""
                output.append(decision.uri.map { Substring($0 + ending) } ?? line)
            }
            if !isVariant { segmentIndex += 1 }
            entry = []
            byteRangeLine = nil
            byteRange = nil
            streamInf = nil
        }
        guard !dropped.isEmpty else { return output.joined(separator: "\n") }
        return output.indices.filter { !dropped.contains($0) }.map { output[$0] }.joined(separator: "\n")
    }

    /// `EXT-X-KEY` of `#EXT-X-KEY:…`.
    static func tagName(_ line: Substring) -> String {
        let body = line.dropFirst()
        return String(body.prefix { $0 != ":" })
    }

    /// What follows the tag's colon.
    static func attributeText(_ line: Substring) -> Substring {
        guard let colon = line.firstIndex(of: ":") else { return "" }
        return line[line.index(after: colon)...]
    }

    /// The range of the quoted value of attribute `name` (without its quotes), found at an attribute boundary.
    static func quotedValue(of name: String, in line: Substring) -> Range<Substring.Index>? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        var index = line.index(after: colon)
        while index < line.endIndex {
            let rest = line[index...]
            if rest.hasPrefix(name + "=\"") {
                let start = line.index(index, offsetBy: name.count + 2)
                guard let close = line[start...].firstIndex(of: "\"") else { return nil }
                return start..<close
            }
            // Skip to the next attribute: past a quoted value if any, then past the comma.
            guard let equals = rest.firstIndex(of: "=") else { return nil }
            var cursor = line.index(after: equals)
            if cursor < line.endIndex, line[cursor] == "\"" {
                guard let close = line[line.index(after: cursor)...].firstIndex(of: "\"") else { return nil }
                cursor = line.index(after: close)
            }
            guard let comma = line[cursor...].firstIndex(of: ",") else { return nil }
            index = line.index(after: comma)
        }
        return nil
    }

    /// The tag line with its URI replaced and attributes taken out, every other byte kept.
    static func edited(_ line: Substring, uriRange: Range<Substring.Index>, decision: HLSURIDecision) -> String {
        var text = String(line[..<uriRange.lowerBound]) + (decision.uri ?? String(line[uriRange])) + String(line[uriRange.upperBound...])
        var remove = decision.removeAttributes
        if decision.dropByteRange { remove.insert("BYTERANGE") }
        if !remove.isEmpty { text = removing(remove, from: Substring(text)) }
        return text
    }

    /// The tag line without the attributes named in `names` (and the comma that joined each).
    static func removing(_ names: Set<String>, from line: Substring) -> String {
        guard let colon = line.firstIndex(of: ":") else { return String(line) }
        var kept: [Substring] = []
        var index = line.index(after: colon)
        let end = line.hasSuffix("\r") ? line.index(before: line.endIndex) : line.endIndex
        while index < end {
            var cursor = index
            while cursor < end, line[cursor] != "=", line[cursor] != "," { cursor = line.index(after: cursor) }
            if cursor < end, line[cursor] == "=" {
                cursor = line.index(after: cursor)
                if cursor < end, line[cursor] == "\"" {
                    let afterQuote = line.index(after: cursor)
                    cursor = line[afterQuote..<end].firstIndex(of: "\"").map { line.index(after: $0) } ?? end
                }
                while cursor < end, line[cursor] != "," { cursor = line.index(after: cursor) }
            }
            let attribute = line[index..<cursor]
            let key = attribute.prefix { $0 != "=" }
            if !names.contains(String(key)) { kept.append(attribute) }
            index = cursor < end ? line.index(after: cursor) : end
        }
        return String(line[...colon]) + kept.joined(separator: ",") + (line.hasSuffix("\r") ? "\r" : "")
    }
}

extension HLSByteRange {
    /// Parses `length[@offset]`; nil when malformed.
    init?(parsing text: Substring) {
        let parts = text.split(separator: "@", maxSplits: 1)
        guard let first = parts.first, let length = Int(first.trimmingSpaces), length >= 0 else { return nil }
        var offset: Int?
        if parts.count == 2 {
            guard let value = Int(parts[1].trimmingSpaces), value >= 0 else { return nil }
            offset = value
        }
        self.init(length: length, offset: offset)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        let start = firstIndex { $0 != " " && $0 != "\r" } ?? endIndex
        let end = lastIndex { $0 != " " && $0 != "\r" }.map { index(after: $0) } ?? start
        return self[start..<Swift.max(start, end)]
    }
}
