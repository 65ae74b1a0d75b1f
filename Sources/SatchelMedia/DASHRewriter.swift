/// What to do with one element of an MPD.
public struct DASHElementEdit: Sendable, Equatable {
    /// Remove the element whole (with the indentation and line break around it).
    public var remove = false
    /// New attribute values by local name (an attribute the element lacks is added); nil removes the attribute.
    /// Only attributes named here change.
    public var attributes: [String: String?] = [:]
    /// New text content (for `BaseURL`); nil leaves it.
    public var text: String?

    /// No change.
    public static let keep = DASHElementEdit()
    /// Remove the element whole.
    public static let remove = DASHElementEdit(remove: true)

    /// An edit.
    public init(remove: Bool = false, attributes: [String: String?] = [:], text: String? = nil) {
        self.remove = remove
        self.attributes = attributes
        self.text = text
    }
}

/// Rewrites an MPD in place: the caller sees every element (with its ancestors) and may remove it, change
/// attributes (`SegmentTemplate@media/@initialization`, `SegmentURL@media`, `Initialization@sourceURL`, ranges)
/// or replace a `BaseURL`'s text; every other byte — elements Satchel does not model (`EventStream`, `Label`,
/// `Role`, `Accessibility`, `SupplementalProperty`, other namespaces), comments, whitespace — stays as it was.
public enum DASHRewriter {
    /// The document (read with ``MarkupSpans``) with `edit`'s answers applied. `edit` is called for every
    /// element in document order except those inside a removed one.
    public static func rewrite(_ document: MarkupSpans, _ edit: (MarkupSpans, Int) -> DASHElementEdit) -> String {
        var replacements: [(range: Range<Int>, bytes: [UInt8])] = []
        var removedUntil = -1
        for id in document.elements.indices {
            let element = document.elements[id]
            if element.range.lowerBound < removedUntil { continue }
            let change = edit(document, id)
            if change.remove {
                replacements.append((lineRange(of: element.range, in: document.bytes), []))
                removedUntil = element.range.upperBound
                continue
            }
            for (name, value) in change.attributes.sorted(by: { $0.key < $1.key }) {
                guard let attribute = element.attribute(name) else {
                    // A value for an attribute the element lacks goes in right after the tag's name.
                    if let value { replacements.append((nameEnd(of: element.range, in: document.bytes), Array(" \(name)=\"\(xmlEscape(value))\"".utf8))) }
                    continue
                }
                if let value {
                    replacements.append((attribute.valueRange, Array(xmlEscape(value).utf8)))
                } else {
                    replacements.append((attribute.fullRange, []))
                }
            }
            if let text = change.text, element.children.isEmpty {
                replacements.append((element.contentRange, Array(xmlEscape(text).utf8)))
            }
        }
        // An insertion (an empty range) goes before a change that starts at the same byte.
        replacements.sort { ($0.range.lowerBound, $0.range.upperBound) < ($1.range.lowerBound, $1.range.upperBound) }
        var output: [UInt8] = []
        output.reserveCapacity(document.bytes.count)
        var cursor = 0
        for (range, bytes) in replacements where range.lowerBound >= cursor {
            output += document.bytes[cursor..<range.lowerBound]
            output += bytes
            cursor = range.upperBound
        }
        output += document.bytes[cursor...]
        return String(decoding: output, as: UTF8.self)
    }

    /// The empty range just after the name of the tag that starts `range`.
    static func nameEnd(of range: Range<Int>, in bytes: [UInt8]) -> Range<Int> {
        var index = range.lowerBound + 1
        while index < range.upperBound, ![0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ">"), UInt8(ascii: "/")].contains(bytes[index]) { index += 1 }
        return index..<index
    }

    /// `range` widened to the whole lines it stands on when nothing but whitespace shares them.
    static func lineRange(of range: Range<Int>, in bytes: [UInt8]) -> Range<Int> {
        var start = range.lowerBound
        while start > 0, bytes[start - 1] == 0x20 || bytes[start - 1] == 0x09 { start -= 1 }
        var end = range.upperBound
        while end < bytes.count, bytes[end] == 0x20 || bytes[end] == 0x09 || bytes[end] == 0x0D { end += 1 }
        let lineStart = start == 0 || bytes[start - 1] == 0x0A
        let lineEnd = end == bytes.count || bytes[end] == 0x0A
        guard lineStart, lineEnd else { return range }
        return start..<min(end + 1, bytes.count)
    }
}
