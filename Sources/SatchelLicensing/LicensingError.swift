import SatchelBytes

/// Why a key or license operation failed. Never carries key material.
public enum LicensingError: ProblemConvertible, Equatable {
    /// 401 for a missing or invalid token, 403 when it does not entitle, 404 for an unknown asset,
    /// 400 for a malformed request, 409 for a replayed one, 500 for configuration and storage, 503 when the policy hook
    /// cannot be asked.
    public var httpStatus: Int {
        switch self {
        case .missingEntitlement, .invalidEntitlement: return 401
        case .notEntitled, .unregisteredDevice, .policyDenied, .deviceDisabled, .rentalBound, .streamLimit, .refusedByPolicy, .offlineRefused: return 403
        case .replayed, .keyHeld: return 409
        case .unknownAsset: return 404
        case .badRequest, .clockSkew: return 400
        case .configuration, .storage: return 500
        case .policyUnavailable: return 503
        }
    }

    /// No entitlement token was given.
    case missingEntitlement
    /// The token is malformed, badly signed or expired.
    case invalidEntitlement(String)
    /// The token does not cover this asset or license type.
    case notEntitled(String)
    /// The signed request's device is not registered with this server (deleted, or registered elsewhere): it
    /// registers again.
    case unregisteredDevice
    /// No key or asset is known by this identifier.
    case unknownAsset(String)
    /// The asset's policy forbids the license now (dates, offline, …).
    case policyDenied(String)
    /// The request is malformed.
    case badRequest(String)
    /// A signed device request was sent again (its nonce was seen).
    case replayed(String)
    /// A signed device request is dated too far from the server's time (ahead or behind): the device should date
    /// its requests by the server's signed time (`GET /time`).
    case clockSkew(String)
    /// A key ID being imported for one asset is held by another (a key belongs to one asset): moved only when asked.
    case keyHeld(keyID: String, asset: String)
    /// The operator disabled the device: it gets no new license and no renewal until enabled again.
    case deviceDisabled
    /// A FairPlay rental plays on the device that leased it (the FairPlay Streaming Programming Guide, "Simultaneous
    /// Renting and Leasing"): another
    /// device is refused until the rental ends.
    case rentalBound
    /// The account plays as many streams at once as it may (a FairPlay lease takes a stream slot).
    case streamLimit
    /// The server's license policy (its policy hook) refused the license, with its reason.
    case refusedByPolicy(String)
    /// A persistent license is refused: the device may not keep the asset (the backplane's code, such as
    /// `device-not-enabled` or `account-download-limit`, and its reason).
    case offlineRefused(code: String, reason: String)
    /// The policy hook could not be asked (unreachable, timed out, an answer it could not read): no license is issued.
    case policyUnavailable(String)
    /// The configuration is unusable (KEK, database, JWKS).
    case configuration(String)
    /// The store failed.
    case storage(String)

    /// A stable identifier, used as the problem type and metric label.
    public var code: String {
        switch self {
        case .missingEntitlement: return "missing-entitlement"
        case .invalidEntitlement: return "invalid-entitlement"
        case .notEntitled: return "not-entitled"
        case .unregisteredDevice: return "device-unregistered"
        case .unknownAsset: return "unknown-asset"
        case .policyDenied: return "policy-denied"
        case .badRequest: return "bad-request"
        case .replayed: return "replayed-request"
        case .clockSkew: return "clock-skew"
        case .keyHeld: return "key-held"
        case .deviceDisabled: return "device-disabled"
        case .rentalBound: return "rental-bound-to-device"
        case .streamLimit: return "stream-limit"
        case .configuration: return "configuration"
        case .storage: return "storage"
        case .refusedByPolicy: return "refused-by-policy"
        case .policyUnavailable: return "policy-unavailable"
        case let .offlineRefused(code, _): return code
        }
    }

    public var description: String {
        switch self {
        case .missingEntitlement: return "an entitlement token is required (Authorization: Bearer … or \"token\" in the body)"
        case let .invalidEntitlement(reason): return "invalid entitlement token: \(reason)"
        case let .notEntitled(reason): return "not entitled: \(reason)"
        case .unregisteredDevice: return "the device is not registered with this server: register it again"
        case let .unknownAsset(id): return "unknown asset or key \(id)"
        case let .policyDenied(reason): return "the asset's policy does not allow this: \(reason)"
        case let .badRequest(reason): return "bad request: \(reason)"
        case let .replayed(reason): return "replayed request: \(reason)"
        case let .clockSkew(reason): return "the request's time is not the server's: \(reason)"
        case let .keyHeld(keyID, asset): return "key \(keyID) belongs to asset \(asset.prefix(200)): import it there, or move it with --reassign"
        case .deviceDisabled: return "this device has been disabled by the operator: it gets no new license or renewal"
        case .rentalBound: return "this rental plays on the device that leased it until the rental ends"
        case .streamLimit: return "this account plays as many streams at once as it may"
        case let .configuration(reason): return "configuration: \(reason)"
        case let .storage(reason): return "key store: \(reason)"
        case let .refusedByPolicy(reason): return "the license policy refused this license: \(reason)"
        case let .policyUnavailable(reason): return "the license policy could not be consulted, so no license was issued: \(reason)"
        case let .offlineRefused(_, reason): return "no offline license: \(reason)"
        }
    }
}
