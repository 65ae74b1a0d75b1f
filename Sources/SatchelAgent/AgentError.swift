import SatchelBytes
import SatchelRights

/// Why an agent operation failed. Never carries key material or tokens.
public enum AgentError: ProblemConvertible, Equatable {
    /// The data directory has no registered device (`satchel agent register` first).
    case notRegistered
    /// No license is stored for the asset.
    case noLicense(String)
    /// The rights do not allow playback now.
    case notPlayable(RightsStatus)
    /// The license server answered with a problem (its type and status); `retryable` for 5xx, 408 and 429.
    case server(type: String, status: Int, detail: String)
    /// The license server could not be reached.
    case network(String)
    /// An answer did not verify or is not for this device (signature, device ID, nonce, sealed keys).
    case invalidAnswer(String)
    /// A backplane answer did not carry the registered server's signature for this request (changed or replayed on
    /// the way): nothing in it was applied, and the refusal is recorded among the device's events.
    case answerNotSigned(String)
    /// The agent's files cannot be read or written.
    case storage(String)
    /// The request cannot be made (a bad argument).
    case badRequest(String)
    /// The license store was changed outside Satchel — its sealed state edited or deleted, or the store copied back
    /// from an earlier time — so its licenses are refused until the server's records restore them (`sync`).
    case storeTampered(String)
    /// The registration (`device.json`: the server and its signing keys, the device's trust anchor) was changed
    /// outside Satchel: nothing that needs it is done until the device registers again.
    case registrationTampered(String)
    /// The device holds its most licenses (``Agent/maximumLicenses``): none is added until some are released.
    case licenseLimit(Int)

    /// A stable identifier.
    public var code: String {
        switch self {
        case .notRegistered: return "not-registered"
        case .noLicense: return "no-license"
        case let .notPlayable(status): return status.rawValue
        case .server: return "license-server"
        case .network: return "network"
        case .invalidAnswer: return "invalid-answer"
        case .answerNotSigned: return "answer-not-signed"
        case .storage: return "storage"
        case .badRequest: return "bad-request"
        case .storeTampered: return "store-tampered"
        case .registrationTampered: return "registration-tampered"
        case .licenseLimit: return "license-limit"
        }
    }

    /// The server's problem type for `server`, else the code.
    public var problemType: String {
        if case let .server(type, _, _) = self { return type }
        return code
    }

    /// True when trying again later may succeed: the server failed or was unreachable.
    public var isRetryable: Bool {
        switch self {
        case .network: return true
        case let .server(_, status, _): return status >= 500 || status == 408 || status == 429
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .notRegistered: return "this data directory has no registered device (run satchel agent register first)"
        case let .noLicense(asset): return "no license is stored for \(asset)"
        case let .notPlayable(status): return "playback is not allowed: \(status.rawValue)"
        case let .server(type, status, detail): return "the license server refused (\(status) \(type)): \(detail)"
        case let .network(reason): return "the license server cannot be reached: \(reason)"
        case let .invalidAnswer(reason): return "the license server's answer is not acceptable: \(reason)"
        case let .answerNotSigned(reason):
            return "the server's answer was changed on the way and was not applied (\(reason)); reach the server over HTTPS, or check the proxy between them"
        case let .storage(reason): return "agent store: \(reason)"
        case let .badRequest(reason): return reason
        case let .licenseLimit(limit): return "this device already holds \(limit) licenses, the most it keeps: release the ones it no longer needs, then try again"
        case let .registrationTampered(reason):
            return "the device's registration was changed outside Satchel (\(reason)): it is not trusted; register the device again (satchel agent register)"
        case let .storeTampered(reason):
            return "the license store was changed outside Satchel (\(reason)): its licenses are refused until they are restored from the license server (satchel license sync, online)"
        }
    }
}
