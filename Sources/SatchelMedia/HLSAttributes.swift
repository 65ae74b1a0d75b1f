/// An HLS attribute list (`KEY=VALUE,KEY="quoted",…`), in order.
public struct HLSAttributes: Sendable, Equatable {
    /// The attributes in order; quoted values are stored without their quotes.
    public private(set) var pairs: [(key: String, value: String, quoted: Bool)]

    /// An empty list.
    public init() { pairs = [] }

    /// Parses an attribute list; malformed pieces are skipped, never fatal.
    public init(parsing text: Substring) {
        pairs = []
        var index = text.startIndex
        while index < text.endIndex {
            guard let equals = text[index...].firstIndex(of: "=") else { break }
            let key = text[index..<equals].trimmingCharacters(in: " ")
            var cursor = text.index(after: equals)
            var value = ""
            var quoted = false
            if cursor < text.endIndex, text[cursor] == "\"" {
                quoted = true
                let start = text.index(after: cursor)
                let close = text[start...].firstIndex(of: "\"") ?? text.endIndex
                value = String(text[start..<close])
                cursor = close < text.endIndex ? text.index(after: close) : close
                if let comma = text[cursor...].firstIndex(of: ",") { cursor = comma } else { cursor = text.endIndex }
            } else {
                let comma = text[cursor...].firstIndex(of: ",") ?? text.endIndex
                value = String(text[cursor..<comma])
                cursor = comma
            }
            if !key.isEmpty { pairs.append((key, value, quoted)) }
            index = cursor < text.endIndex ? text.index(after: cursor) : cursor
        }
    }

    /// The value of `key`.
    public subscript(key: String) -> String? { pairs.first { $0.key == key }?.value }

    /// Appends an attribute.
    public mutating func add(_ key: String, _ value: String?, quoted: Bool = false) {
        guard let value else { return }
        pairs.append((key, value, quoted))
    }

    /// Sets `key` to `value`, in place when it is there, else at the end.
    public mutating func set(_ key: String, _ value: String, quoted: Bool = false) {
        if let index = pairs.firstIndex(where: { $0.key == key }) { pairs[index] = (key, value, quoted) } else { pairs.append((key, value, quoted)) }
    }

    /// The list as written in a playlist.
    public var text: String {
        pairs.map { $0.quoted ? "\($0.key)=\"\($0.value)\"" : "\($0.key)=\($0.value)" }.joined(separator: ",")
    }

    public static func == (lhs: HLSAttributes, rhs: HLSAttributes) -> Bool {
        lhs.pairs.elementsEqual(rhs.pairs) { $0.key == $1.key && $0.value == $1.value && $0.quoted == $1.quoted }
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> String {
        String(drop { $0 == set }.reversed().drop { $0 == set }.reversed())
    }
}
