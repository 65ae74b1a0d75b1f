import SatchelBytes

/// Why a license, certificate or time token could not be made or read. Never carries key material.
public enum RightsError: ProblemConvertible, Equatable {
    /// The token is not a well-formed compact JWS of the expected claims.
    case malformedToken(String)
    /// The signature does not verify with the expected key.
    case badSignature(String)
    /// A public key (JWK) is malformed or not a P-256 key.
    case badKey(String)
    /// A sealed content key cannot be opened with this device's key (another device's license, or tampered).
    case cannotOpenKey(String)

    /// A stable identifier.
    public var code: String {
        switch self {
        case .malformedToken: return "malformed-token"
        case .badSignature: return "bad-signature"
        case .badKey: return "bad-key"
        case .cannotOpenKey: return "cannot-open-key"
        }
    }

    /// 400 for malformed input, 401 for a signature that does not verify, 403 for a key of another device.
    public var httpStatus: Int {
        switch self {
        case .malformedToken, .badKey: return 400
        case .badSignature: return 401
        case .cannotOpenKey: return 403
        }
    }

    public var description: String {
        switch self {
        case let .malformedToken(reason): return "malformed token: \(reason)"
        case let .badSignature(reason): return "signature does not verify: \(reason)"
        case let .badKey(reason): return "unusable public key: \(reason)"
        case let .cannotOpenKey(reason): return "a content key cannot be opened: \(reason)"
        }
    }
}
