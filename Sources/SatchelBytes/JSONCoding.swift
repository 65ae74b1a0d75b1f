import Foundation

/// The JSON and date conventions every module shares: keys sorted and slashes unescaped (stable text for storage,
/// signatures and diffs), dates as ISO 8601 in UTC. One place to make a coder, so two files never disagree.
public enum JSONCoding {
    /// How the text is laid out.
    public enum Layout: Sendable {
        /// One line: bodies on the wire, rows in a store.
        case compact
        /// Indented: files people read, command output.
        case pretty
    }

    /// How dates are written.
    public enum Dates: Sendable {
        /// ISO 8601 in UTC (`2026-11-25T16:45:00Z`): everything people read and every new format.
        case iso8601
        /// Seconds since 1970: rights, claims and the secure clock (the form JWT claims use).
        case unixSeconds
        /// Seconds since 2001, Foundation's own form: kept only for the stores first written in it (the download
        /// index's rows, the device's sealed state), so what an earlier version stored still reads.
        case referenceSeconds
    }

    /// An encoder of the shared conventions.
    public static func encoder(_ layout: Layout = .compact, dates: Dates = .iso8601) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = layout == .pretty ? [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes] : [.sortedKeys, .withoutEscapingSlashes]
        switch dates {
        case .iso8601: encoder.dateEncodingStrategy = .iso8601
        case .unixSeconds: encoder.dateEncodingStrategy = .secondsSince1970
        case .referenceSeconds: encoder.dateEncodingStrategy = .deferredToDate
        }
        return encoder
    }

    /// A decoder of the shared conventions.
    public static func decoder(dates: Dates = .iso8601) -> JSONDecoder {
        let decoder = JSONDecoder()
        switch dates {
        case .iso8601: decoder.dateDecodingStrategy = .iso8601
        case .unixSeconds: decoder.dateDecodingStrategy = .secondsSince1970
        case .referenceSeconds: decoder.dateDecodingStrategy = .deferredToDate
        }
        return decoder
    }
}

/// Dates as text: ISO 8601 in UTC (`2026-11-25T16:45:00Z`), the one form every log line, error and output uses.
public enum ISODate {
    /// `date` as `2026-11-25T16:45:00Z`.
    public static func string(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// A date written as ISO 8601 (`2026-11-25T16:45:00Z`, fractions of a second allowed), or a day (`2026-12-31`,
    /// its start in UTC); nil for anything else.
    public static func date(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day())
    }
}
