/// An XML document read for editing in place: every element with the byte ranges of its tags, its
/// attributes' values and its text, so an edit can replace exactly those bytes and keep every other byte
/// (comments, processing instructions, whitespace, unknown namespaced elements) as it was.
/// Bounded: at most 64 levels deep and ``maxElements`` elements; malformed markup is a ``MediaError``.
public struct MarkupSpans: Sendable {
    /// One attribute.
    public struct Attribute: Sendable {
        /// Local name (`cenc:default_KID` → `default_KID`).
        public let name: String
        /// The value with entities decoded.
        public let value: String
        /// The value's bytes between the quotes.
        public let valueRange: Range<Int>
        /// The attribute with the whitespace before it, for removal.
        public let fullRange: Range<Int>
    }

    /// One element.
    public struct Element: Sendable {
        /// Local name.
        public let name: String
        /// Attributes in document order.
        public let attributes: [Attribute]
        /// Index of the parent element, nil for the root.
        public let parent: Int?
        /// Indices of the child elements, in order.
        public internal(set) var children: [Int]
        /// From `<` of the start tag to after the `>` of the end tag (or of a self-closing tag).
        public internal(set) var range: Range<Int>
        /// The bytes between the start and end tags (empty for a self-closing element).
        public internal(set) var contentRange: Range<Int>

        /// The attribute named `name`.
        public func attribute(_ name: String) -> Attribute? { attributes.first { $0.name == name } }
    }

    /// Elements in document order (the root first).
    public private(set) var elements: [Element] = []
    /// The document's bytes.
    public let bytes: [UInt8]
    /// The most elements a document may hold.
    public static let maxElements = 2_000_000

    /// Reads `text`.
    public init(_ text: String) throws(MediaError) {
        bytes = Array(text.utf8)
        var stack: [Int] = []
        var index = 0
        let count = bytes.count
        while index < count {
            guard bytes[index] == UInt8(ascii: "<") else {
                index += 1
                continue
            }
            if starts("<!--", at: index) {
                index = try skip(past: "-->", from: index + 4)
            } else if starts("<![CDATA[", at: index) {
                index = try skip(past: "]]>", from: index + 9)
            } else if starts("<?", at: index) {
                index = try skip(past: "?>", from: index + 2)
            } else if starts("<!DOCTYPE", at: index) || starts("<!ENTITY", at: index) {
                throw .malformed("XML: document type declarations are not accepted")  // no DTD, so no entity to expand
            } else if starts("<!", at: index) {
                index = try skip(past: ">", from: index + 2)
            } else if starts("</", at: index) {
                let close = try skip(past: ">", from: index + 2)
                guard let open = stack.popLast() else { throw .malformed("XML: an end tag without a start tag") }
                elements[open].contentRange = elements[open].contentRange.lowerBound..<index
                elements[open].range = elements[open].range.lowerBound..<close
                index = close
            } else {
                index = try startTag(at: index, stack: &stack)
            }
        }
        guard stack.isEmpty, !elements.isEmpty else { throw .malformed("XML: the document ends inside an element") }
    }

    private func starts(_ token: String, at index: Int) -> Bool {
        let token = Array(token.utf8)
        return index + token.count <= bytes.count && bytes[index..<(index + token.count)].elementsEqual(token)
    }

    /// The index just past the next `token` at or after `from`.
    private func skip(past token: String, from: Int) throws(MediaError) -> Int {
        let token = Array(token.utf8)
        var index = from
        while index + token.count <= bytes.count {
            if bytes[index] == token[0], bytes[index..<(index + token.count)].elementsEqual(token) { return index + token.count }
            index += 1
        }
        throw .malformed("XML: unterminated markup")
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    private mutating func startTag(at start: Int, stack: inout [Int]) throws(MediaError) -> Int {
        var index = start + 1
        let nameStart = index
        while index < bytes.count, !Self.isSpace(bytes[index]), bytes[index] != UInt8(ascii: ">"), bytes[index] != UInt8(ascii: "/") { index += 1 }
        guard index > nameStart else { throw .malformed("XML: a tag without a name") }
        let name = Self.local(String(decoding: bytes[nameStart..<index], as: UTF8.self))
        var attributes: [Attribute] = []
        while true {
            let before = index
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count else { throw .malformed("XML: the document ends inside a tag") }
            if bytes[index] == UInt8(ascii: ">") || bytes[index] == UInt8(ascii: "/") { break }
            let keyStart = index
            while index < bytes.count, bytes[index] != UInt8(ascii: "="), !Self.isSpace(bytes[index]) { index += 1 }
            let key = String(decoding: bytes[keyStart..<index], as: UTF8.self)
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { throw .malformed("XML: attribute \(key.prefix(40)) has no value") }
            index += 1
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
                throw .malformed("XML: attribute \(key.prefix(40)) is not quoted")
            }
            let quote = bytes[index]
            let valueStart = index + 1
            guard let close = bytes[valueStart...].firstIndex(of: quote) else { throw .malformed("XML: unterminated attribute value") }
            attributes.append(Attribute(name: Self.local(key), value: Self.decode(bytes[valueStart..<close]), valueRange: valueStart..<close,
                                        fullRange: before..<(close + 1)))
            index = close + 1
        }
        let selfClosing = bytes[index] == UInt8(ascii: "/")
        if selfClosing {
            guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") else { throw .malformed("XML: a malformed self-closing tag") }
            index += 1
        }
        index += 1  // past '>'
        guard stack.count < 64 else { throw .malformed("XML: elements nested more than 64 deep") }
        guard elements.count < Self.maxElements else { throw .malformed("XML: more than \(Self.maxElements) elements") }
        let element = Element(name: name, attributes: attributes, parent: stack.last, children: [], range: start..<index, contentRange: index..<index)
        let id = elements.count
        elements.append(element)
        if let parent = stack.last { elements[parent].children.append(id) }
        if !selfClosing { stack.append(id) }
        return index
    }

    /// The text content of element `id` (entities decoded).
    public func text(of id: Int) -> String {
        Self.decode(bytes[elements[id].contentRange])
    }

    /// The element's own text: its content without child elements and comments, CDATA unwrapped, entities decoded.
    public func directText(of id: Int) -> String {
        let element = elements[id]
        var pieces: [ArraySlice<UInt8>] = []
        var cursor = element.contentRange.lowerBound
        for child in element.children {
            let range = elements[child].range
            if range.lowerBound > cursor { pieces.append(bytes[cursor..<range.lowerBound]) }
            cursor = max(cursor, range.upperBound)
        }
        if element.contentRange.upperBound > cursor { pieces.append(bytes[cursor..<element.contentRange.upperBound]) }
        var text = ""
        for piece in pieces {
            var rest = piece
            while let open = rest.firstIndex(of: UInt8(ascii: "<")) {
                text += Self.decode(rest[..<open])
                let tail = rest[open...]
                if tail.starts(with: Array("<![CDATA[".utf8)), let end = Self.find(Array("]]>".utf8), in: tail) {
                    text += String(decoding: tail[(open + 9)..<end], as: UTF8.self)
                    rest = tail[(end + 3)...]
                } else if tail.starts(with: Array("<!--".utf8)) {
                    rest = Self.find(Array("-->".utf8), in: tail).map { tail[($0 + 3)...] } ?? []
                } else if let end = Self.find(Array(">".utf8), in: tail) {
                    rest = tail[(end + 1)...]  // a comment or processing instruction
                } else {
                    rest = []
                }
            }
            text += Self.decode(rest)
        }
        return text
    }

    private static func find(_ token: [UInt8], in bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.count >= token.count else { return nil }
        var index = bytes.startIndex
        while index + token.count <= bytes.endIndex {
            if bytes[index..<(index + token.count)].elementsEqual(token) { return index }
            index += 1
        }
        return nil
    }

    static func local(_ name: String) -> String {
        name.split(separator: ":").last.map(String.init) ?? name
    }

    /// Decodes the five predefined entities and character references.
    static func decode(_ raw: ArraySlice<UInt8>) -> String {
        let text = String(decoding: raw, as: UTF8.self)
        guard text.contains("&") else { return text }
        var result = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            guard let semicolon = rest[amp...].prefix(12).firstIndex(of: ";") else {
                result += "&"
                rest = rest[rest.index(after: amp)...]
                continue
            }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": result += "&"
            case "lt": result += "<"
            case "gt": result += ">"
            case "quot": result += "\""
            case "apos": result += "'"
            default:
                let number = entity.hasPrefix("#x") ? UInt32(entity.dropFirst(2), radix: 16) : entity.hasPrefix("#") ? UInt32(entity.dropFirst()) : nil
                if let number, let scalar = Unicode.Scalar(number) { result.unicodeScalars.append(scalar) } else { result += "&" + entity + ";" }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + rest
    }
}
