import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelRights

/// The rights attached to an asset's keys.
public struct AssetPolicy: Codable, Sendable, Equatable {
    /// Licenses are refused before this date.
    public var notBefore: Date?
    /// Licenses are refused after this date.
    public var notAfter: Date?
    /// FairPlay lease duration in seconds.
    public var leaseSeconds: UInt32?
    /// FairPlay rental duration in seconds.
    public var rentalSeconds: UInt32?
    /// Allow the FairPlay key to be persisted (offline playback).
    public var persist: Bool
    /// Validity of a persisted key; nil = unlimited.
    public var persistSeconds: UInt32?
    /// Dual expiry: the 16-byte content ID in hex.
    public var offlineContentID: String?
    /// Dual expiry: storage duration.
    public var storageSeconds: UInt32?
    /// Dual expiry: playback duration.
    public var playbackSeconds: UInt32?
    /// HDCP requirement.
    public var hdcp: HDCPRequirement?
    /// Allow AirPlay and AV adapter output.
    public var allowAirPlay: Bool
    /// Allow persistent (offline) licenses: Clear Key persistent-license, FairPlay persistence.
    public var offline: Bool
    /// How often a device renews a Satchel license (nil: never; a rental alone is not renewable).
    public var renewalSeconds: UInt32?

    /// Creates a policy; by default: no dates, no durations, no AirPlay, online only.
    public init(notBefore: Date? = nil, notAfter: Date? = nil, leaseSeconds: UInt32? = nil, rentalSeconds: UInt32? = nil,
                persist: Bool = false, persistSeconds: UInt32? = nil, offlineContentID: String? = nil, storageSeconds: UInt32? = nil,
                playbackSeconds: UInt32? = nil, hdcp: HDCPRequirement? = nil, allowAirPlay: Bool = false, offline: Bool = false,
                renewalSeconds: UInt32? = nil) {
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.leaseSeconds = leaseSeconds
        self.rentalSeconds = rentalSeconds
        self.persist = persist
        self.persistSeconds = persistSeconds
        self.offlineContentID = offlineContentID
        self.storageSeconds = storageSeconds
        self.playbackSeconds = playbackSeconds
        self.hdcp = hdcp
        self.allowAirPlay = allowAirPlay
        self.offline = offline
        self.renewalSeconds = renewalSeconds
    }

    /// The availability window (start inclusive, end exclusive: `DateWindow`, the rule the device keeps too).
    public var window: DateWindow { DateWindow(start: notBefore, end: notAfter) }

    /// Checks the availability window at `now`.
    public func checkWindow(at now: Date) throws(LicensingError) {
        switch window.position(at: now) {
        case .before: throw .policyDenied("not available before \(ISODate.string(notBefore ?? now))")
        case .after: throw .policyDenied("not available after \(ISODate.string(notAfter ?? now))")
        case .within: return
        }
    }

    /// Applies a token's overrides (the content provider's backend may narrow or widen the rights per user).
    public func applying(_ overrides: PolicyOverrides?) -> AssetPolicy {
        guard let overrides else { return self }
        var policy = self
        if let value = overrides.leaseSeconds { policy.leaseSeconds = value }
        if let value = overrides.rentalSeconds { policy.rentalSeconds = value }
        if let value = overrides.persist { policy.persist = value }
        if let value = overrides.persistSeconds { policy.persistSeconds = value }
        if let value = overrides.hdcp { policy.hdcp = value }
        if let value = overrides.allowAirPlay { policy.allowAirPlay = value }
        return policy
    }

    /// The FairPlay CKC policy for `key` under these rights.
    public func fairPlayPolicy(contentKey: SecretBytes, iv: [UInt8]) throws(LicensingError) -> ContentKeyPolicy {
        do {
            let offlineKey = try offlineContentID.map { (hex) throws -> OfflineKeyPolicy in
                try OfflineKeyPolicy(contentID: Hex.decode(hex, count: 16), storageSeconds: storageSeconds ?? 0, playbackSeconds: playbackSeconds ?? 0)
            }
            let duration = offlineKey == nil ? ContentKeyDuration.from(leaseSeconds: leaseSeconds, rentalSeconds: rentalSeconds,
                                                                       persist: persist && offline, persistSeconds: persistSeconds) : nil
            return try ContentKeyPolicy(contentKey: contentKey, contentIV: iv, duration: duration, hdcp: hdcp, offlineKey: offlineKey,
                                        streaming: StreamingPermissions(airPlay: allowAirPlay, avAdapter: allowAirPlay))
        } catch {
            throw .configuration("the asset's FairPlay policy is inconsistent: \(error)")
        }
    }
}

/// Per-token changes to an asset policy, carried in the entitlement's `policy` claim.
public struct PolicyOverrides: Codable, Sendable, Equatable {
    /// Replaces the lease (seconds).
    public var leaseSeconds: UInt32?
    /// Replaces the rental (seconds).
    public var rentalSeconds: UInt32?
    /// Replaces whether a license may persist (offline).
    public var persist: Bool?
    /// Replaces how long a persisted license lasts (seconds).
    public var persistSeconds: UInt32?
    /// Replaces the HDCP requirement.
    public var hdcp: HDCPRequirement?
    /// Replaces whether AirPlay is allowed.
    public var allowAirPlay: Bool?

    /// Creates overrides.
    public init(leaseSeconds: UInt32? = nil, rentalSeconds: UInt32? = nil, persist: Bool? = nil, persistSeconds: UInt32? = nil,
                hdcp: HDCPRequirement? = nil, allowAirPlay: Bool? = nil) {
        self.leaseSeconds = leaseSeconds
        self.rentalSeconds = rentalSeconds
        self.persist = persist
        self.persistSeconds = persistSeconds
        self.hdcp = hdcp
        self.allowAirPlay = allowAirPlay
    }
}
