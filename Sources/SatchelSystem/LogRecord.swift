import Foundation
import Logging

/// One log line as a value: what the log subscription delivers and what is written to a log file.
public struct LogRecord: Sendable, Equatable {
    /// When it was logged.
    public var date: Date
    /// Its level.
    public var level: Logger.Level
    /// The logger's label (`satchel.downloads`, `satchel.serve`, …).
    public var label: String
    /// The message, with URL query strings removed (`LogRedaction`).
    public var message: String
    /// Metadata, rendered as text and redacted the same way.
    public var metadata: [String: String]

    /// A record.
    public init(date: Date, level: Logger.Level, label: String, message: String, metadata: [String: String] = [:]) {
        self.date = date
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
    }

    /// `2026-11-23T10:00:00.123Z warning satchel.downloads: message key=value`.
    public var line: String {
        let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "\(LogRecord.timestamp(date)) \(level) \(label): \(message)\(fields.isEmpty ? "" : " " + fields)"
    }

    static func timestamp(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().dateSeparator(.dash).time(includingFractionalSeconds: true).timeSeparator(.colon))
    }
}

/// What may never reach a log: URL query strings (they carry tokens and signatures). Applied to every record
/// by `SatchelLogHandler`, whatever its source, as a second line of defence behind callers that already
/// leave secrets out.
package enum LogRedaction {
    /// `text` with the query of every http(s) URL replaced by `?…`.
    package static func redact(_ text: String) -> String {
        guard text.contains("?"), text.contains("://") else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count)
        var inURL = false, inQuery = false
        var scalars = text.unicodeScalars[...]
        while let scalar = scalars.first {
            if !inURL, scalars.starts(with: "http://".unicodeScalars) || scalars.starts(with: "https://".unicodeScalars) { inURL = true }
            let ends = scalar.properties.isWhitespace || scalar == "\"" || scalar == "'" || scalar == "<" || scalar == ">" || scalar == ")"
            if ends {
                inURL = false
                inQuery = false
            } else if inURL, !inQuery, scalar == "?" {
                inQuery = true
                out += "?…"
            }
            if !inQuery || ends { out.unicodeScalars.append(scalar) }
            scalars = scalars.dropFirst()
        }
        return out
    }
}

extension Logger.Level {
    /// A level named on the command line or in `SATCHEL_LOG_LEVEL` (`trace`, `debug`, `info`, `notice`,
    /// `warning`, `error`, `critical`; `warn` too), nil for anything else.
    public init?(name: String) {
        let lowered = name.lowercased()
        guard let level = Logger.Level(rawValue: lowered == "warn" ? "warning" : lowered) else { return nil }
        self = level
    }
}
