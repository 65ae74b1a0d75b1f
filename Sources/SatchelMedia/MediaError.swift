import SatchelBytes

/// Why media bytes could not be read or written. Cases say where and what, so a user can act.
public enum MediaError: ProblemConvertible, Equatable {
    /// `media-truncated`, `media-malformed` or `media-unsupported`.
    public var code: String {
        switch self {
        case .truncated: return "media-truncated"
        case .malformed: return "media-malformed"
        case .unsupported: return "media-unsupported"
        }
    }

    /// Media is input: 400, or 415 for what Satchel does not handle.
    public var httpStatus: Int {
        if case .unsupported = self { return 415 }
        return 400
    }

    /// The input ended inside a structure.
    case truncated(String)
    /// A structure is malformed.
    case malformed(String)
    /// The input is valid but uses something Satchel does not handle.
    case unsupported(String)

    /// Wraps a byte-reader failure with what was being read.
    static func reading(_ what: String, _ error: ByteReaderError) -> MediaError {
        .truncated("\(what): \(error)")
    }

    public var description: String {
        switch self {
        case let .truncated(what): return "truncated input: \(what)"
        case let .malformed(what): return "malformed input: \(what)"
        case let .unsupported(what): return "unsupported: \(what)"
        }
    }
}
