import Foundation

/// A small XML element tree (for MPD and Smooth manifests).
public final class MarkupElement: @unchecked Sendable {
    /// Local name (namespace prefix removed).
    public let name: String
    /// Attributes by local name (prefixes removed, e.g. `cenc:default_KID` → `default_KID`).
    public let attributes: [String: String]
    /// Child elements.
    public fileprivate(set) var children: [MarkupElement] = []
    /// Concatenated text content.
    public fileprivate(set) var text: String = ""

    init(name: String, attributes: [String: String]) {
        self.name = name
        self.attributes = attributes
    }

    /// Children named `name`.
    public func children(_ name: String) -> [MarkupElement] { children.filter { $0.name == name } }

    /// The first child named `name`.
    public func child(_ name: String) -> MarkupElement? { children.first { $0.name == name } }

    /// Parses a document and returns its root element. Built on ``MarkupSpans``, Satchel's own bounded scanner
    /// (64 levels, ``MarkupSpans/maxElements`` elements, no DTD), not on Foundation's XMLParser, which fuzzing
    /// showed to crash on hostile markup.
    public static func parse(_ text: String) throws(MediaError) -> MarkupElement {
        let spans = try MarkupSpans(text)
        guard !spans.elements.isEmpty else { throw .malformed("XML: no root element") }
        // Elements are in document order and a parent precedes its children: build them in one pass.
        var built: [MarkupElement] = []
        built.reserveCapacity(spans.elements.count)
        for (id, element) in spans.elements.enumerated() {
            var attributes: [String: String] = [:]
            for attribute in element.attributes where attributes[attribute.name] == nil { attributes[attribute.name] = attribute.value }
            let node = MarkupElement(name: element.name, attributes: attributes)
            node.text = spans.directText(of: id)
            if let parent = element.parent, parent < built.count { built[parent].children.append(node) }
            built.append(node)
        }
        return built[0]
    }
}

/// Escapes text for XML and HTML attributes (either quote) and content: the one escaper of the MPD writer and
/// rewriter, and of the dashboard's SVG charts.
public func xmlEscape(_ text: String) -> String {
    var out = ""
    for char in text {
        switch char {
        case "&": out += "&amp;"
        case "<": out += "&lt;"
        case ">": out += "&gt;"
        case "\"": out += "&quot;"
        case "'": out += "&apos;"
        default: out.append(char)
        }
    }
    return out
}
