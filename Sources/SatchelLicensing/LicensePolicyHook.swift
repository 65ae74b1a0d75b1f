import Foundation

/// What the license service knows about a license it is about to issue, handed to the ``LicensePolicyHook``: the
/// license's type as the audit names it, the asset, the user, the request's custom data (data the
/// app adds to the challenge, which the client does not interpret), and the rights the license would carry.
public struct LicenseRequestFacts: Codable, Sendable, Equatable {
    /// `fairplay`, `fairplay-sync`, `clearkey-temporary`, `clearkey-persistent-license`, `aes-128` or `satchel` (a
    /// device license).
    public var type: String
    /// The asset.
    public var assetID: String
    /// The user (the token's `sub`).
    public var subject: String
    /// The custom data the request carried (nil: none).
    public var customData: String?
    /// The rights the license would carry: the asset's policy with the token's overrides.
    public var policy: AssetPolicy

    /// Facts.
    public init(type: String, assetID: String, subject: String, customData: String?, policy: AssetPolicy) {
        self.type = type
        self.assetID = assetID
        self.subject = subject
        self.customData = customData
        self.policy = policy
    }
}

/// The hook's answer: issue the license (with overrides narrowing or changing its rights, applied after the token's),
/// or refuse it with a reason the client is told.
public enum LicensePolicyVerdict: Sendable, Equatable {
    /// Issue, with these overrides (nil: the rights as they are).
    case issue(PolicyOverrides?)
    /// Refuse, with this reason (at most 200 bytes are kept).
    case refuse(String)
}

/// The operator's say on each license, asked by the ``LicenseService`` after the token and the asset's policy allow
/// it and before the license is recorded: a business rule the server's configuration cannot express (a custom data
/// value, a subscriber's plan). An error the hook throws refuses the license
/// (``LicensingError/policyUnavailable(_:)``): no license goes out that the hook did not see.
public protocol LicensePolicyHook: Sendable {
    /// The verdict on one license.
    func decide(_ facts: LicenseRequestFacts) async throws(LicensingError) -> LicensePolicyVerdict
}

extension LicenseService {
    /// The largest custom data a request may carry, in bytes (as the client side sends at most).
    public static let maximumCustomData = 64 * 1024

    /// Asks the hook (when there is one) about a license of `type` with `policy`; answers the policy to issue.
    func consult(_ type: String, assetID: String, subject: String, customData: String?, policy: AssetPolicy) async throws(LicensingError) -> AssetPolicy {
        if let customData, customData.utf8.count > Self.maximumCustomData {
            throw .badRequest("custom data is at most \(Self.maximumCustomData) bytes")
        }
        guard let policyHook else { return policy }
        let facts = LicenseRequestFacts(type: type, assetID: assetID, subject: subject, customData: customData, policy: policy)
        switch try await policyHook.decide(facts) {
        case let .issue(overrides): return policy.applying(overrides)
        case let .refuse(reason): throw .refusedByPolicy(String(reason.utf8.prefix(200)) ?? "refused")
        }
    }
}
