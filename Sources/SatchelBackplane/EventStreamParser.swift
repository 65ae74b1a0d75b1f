/// Server-sent events read from a stream of bytes (the WHATWG `text/event-stream` format): lines end with LF, CRLF
/// or CR; `data:` lines of one event are joined with LF; `id:` and `event:` are kept; a line starting with `:` is a
/// comment (a heartbeat); a blank line dispatches the event. Pure: bytes in, events out, whatever the chunking.
public struct EventStreamParser: Sendable {
    /// One event.
    public struct Event: Sendable, Equatable {
        /// Its `id:` (the last one seen in the stream, as the format says).
        public var id: String?
        /// Its `event:` (default `message`).
        public var name: String
        /// Its `data:` lines joined with LF.
        public var data: String
    }

    /// The longest line kept (longer lines are cut): a hostile server cannot grow memory without bound.
    public static let maximumLine = 1 << 20

    private var line: [UInt8] = []
    private var lastWasCR = false
    private var data: [String] = []
    private var name = ""
    private var lastID: String?
    private var sawField = false

    /// A parser at the start of a stream.
    public init() {}

    /// The events `bytes` complete.
    public mutating func feed(_ bytes: some Sequence<UInt8>) -> [Event] {
        var events: [Event] = []
        for byte in bytes {
            if byte == 0x0A, lastWasCR {
                lastWasCR = false
                continue
            }
            lastWasCR = byte == 0x0D
            if byte == 0x0A || byte == 0x0D {
                if let event = endLine() { events.append(event) }
            } else if line.count < Self.maximumLine {
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine() -> Event? {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            defer {
                data = []
                name = ""
                sawField = false
            }
            guard sawField, !data.isEmpty else { return nil }
            return Event(id: lastID, name: name.isEmpty ? "message" : name, data: data.joined(separator: "\n"))
        }
        if line.first == UInt8(ascii: ":") { return nil }
        let text = String(decoding: line, as: UTF8.self)
        let field: Substring, value: Substring
        if let colon = text.firstIndex(of: ":") {
            field = text[..<colon]
            let rest = text[text.index(after: colon)...]
            value = rest.first == " " ? rest.dropFirst() : rest
        } else {
            (field, value) = (Substring(text), "")
        }
        sawField = true
        switch field {
        case "data": data.append(String(value))
        case "event": name = String(value)
        case "id" where !value.contains("\0"): lastID = String(value)
        default: break
        }
        return nil
    }
}
