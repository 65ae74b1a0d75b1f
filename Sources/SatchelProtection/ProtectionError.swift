/// Why content could not be encrypted or decrypted. Never carries key material.
public enum ProtectionError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A key, key ID or IV has the wrong size.
    case invalidLength(what: String, expected: Int, actual: Int)
    /// Ciphertext is malformed (bad padding, not whole blocks, subsamples that do not fit).
    case malformed(String)
    /// A message (Clear Key request, JSON) is invalid.
    case invalidMessage(String)
    /// The cipher failed.
    case cryptoFailure(String)

    public var description: String {
        switch self {
        case let .invalidLength(what, expected, actual): return "\(what) must be \(expected) bytes, got \(actual)"
        case let .malformed(what): return "malformed protected data: \(what)"
        case let .invalidMessage(what): return "invalid message: \(what)"
        case let .cryptoFailure(what): return "cryptographic operation failed: \(what)"
        }
    }
}
