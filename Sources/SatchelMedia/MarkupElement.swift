import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// A small XML element tree (for MPD and Smooth manifests), built with Foundation's XMLParser.
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

    /// Parses a document and returns its root element.
    public static func parse(_ text: String) throws(MediaError) -> MarkupElement {
        // Manifests never need a DTD; one is where entity expansion bombs and external entities live.
        if text.contains("<!DOCTYPE") || text.contains("<!ENTITY") { throw .malformed("XML: document type declarations are not accepted") }
        let builder = TreeBuilder()
        let parser = XMLParser(data: Data(text.utf8))
        parser.delegate = builder
        parser.shouldResolveExternalEntities = false
        guard parser.parse(), let root = builder.root else {
            throw .malformed("XML: \(parser.parserError.map { "\($0.localizedDescription)" } ?? "no root element")")
        }
        return root
    }

    private final class TreeBuilder: NSObject, XMLParserDelegate {
        var root: MarkupElement?
        var stack: [MarkupElement] = []

        static func local(_ name: String) -> String { name.split(separator: ":").last.map(String.init) ?? name }

        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            guard stack.count < 64 else { parser.abortParsing(); return }
            var local: [String: String] = [:]
            for (key, value) in attributes { local[Self.local(key)] = value }
            let element = MarkupElement(name: Self.local(elementName), attributes: local)
            if let parent = stack.last { parent.children.append(element) } else if root == nil { root = element }
            stack.append(element)
        }

        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
            _ = stack.popLast()
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            stack.last?.text += string
        }
    }
}

/// Escapes text for XML attributes (either quote) and content: the one escaper of the MPD writer and rewriter.
func xmlEscape(_ text: String) -> String {
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
