import SatchelBytes

/// Why content could not be encrypted or decrypted. Never carries key material.
public enum ProtectionError: ProblemConvertible, Equatable {
    /// `invalid-length`, `malformed-protected-data`, `invalid-message`, `crypto-failure`, `integrity` or `wrong-key`.
    public var code: String {
        switch self {
        case .invalidLength: return "invalid-length"
        case .malformed: return "malformed-protected-data"
        case .invalidMessage: return "invalid-message"
        case .cryptoFailure: return "crypto-failure"
        case .integrity: return "integrity"
        case .wrongKey: return "wrong-key"
        }
    }

    /// A client's message or data is at fault (400); a failing cipher is the server's (500).
    public var httpStatus: Int {
        if case .cryptoFailure = self { return 500 }
        return 400
    }

    /// What a client sees: its own mistake in words; a server fault as a bare "bad request" never says more.
    public var problemType: String { httpStatus == 400 ? "bad-request" : "internal" }

    /// A key, key ID or IV has the wrong size.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// Ciphertext is malformed (bad padding, not whole blocks, subsamples that do not fit).
    case malformed(String)
    /// A message (Clear Key request, JSON) is invalid.
    case invalidMessage(String)
    /// The cipher failed.
    case cryptoFailure(String)
    /// A protected file's chunk (its index; -1: the header) does not open: changed, moved, cut short or extended.
    case integrity(chunk: Int)
    /// The key does not open this protected file.
    case wrongKey

    public var description: String {
        switch self {
        case let .invalidLength(what, expected, actual): return "\(what) must be \(expected) bytes, got \(actual)"
        case let .malformed(what): return "malformed protected data: \(what)"
        case let .invalidMessage(what): return "invalid message: \(what)"
        case let .cryptoFailure(what): return "cryptographic operation failed: \(what)"
        case let .integrity(chunk):
            return chunk < 0 ? "the protected file's header is damaged" : "chunk \(chunk) of the protected file is damaged (changed, moved, cut short or extended)"
        case .wrongKey: return "the key does not open this protected file"
        }
    }
}
