import Foundation

/// What the license service remembers of FairPlay licenses beyond the audit (the FairPlay Streaming Programming
/// Guide): the device each combined
/// rental-and-lease plays on, and each download's offline key (dual expiry) by the content ID its CKC carried.
public protocol FairPlayRecording: Sendable {
    /// Binds `subject`'s rental of `asset` to the device `device` (the SPC's HU, hex) until `until`; the same device
    /// again changes nothing; another device while the binding holds is refused ``LicensingError/rentalBound``.
    func bindRental(subject: String, asset: String, device: String, until: Date, at now: Date) async throws(LicensingError)
    /// Records a download's offline key.
    func recordOfflineKey(_ key: OfflineKeyRecord) async throws(LicensingError)
    /// A Sync SPC from `subject` for `contentID`: its download's record updated (a duration of 0: its key expired or
    /// was deleted, and the download is released), or nil for a content ID this server did not issue to `subject`.
    func synced(contentID: String, durationToExpiry: UInt32, subject: String, at now: Date) async throws(LicensingError) -> OfflineKeyRecord?
    /// The offline keys issued (every subject's, or one's), newest first, at most `limit`.
    func offlineKeys(subject: String?, limit: Int) async throws(LicensingError) -> [OfflineKeyRecord]
}

/// One download's offline key (the FairPlay Streaming Programming Guide, Table 7-1): the content ID the CKC carried,
/// whose it is, and what its Sync
/// SPCs said.
public struct OfflineKeyRecord: Codable, Sendable, Equatable {
    /// Where the download stands.
    public enum State: String, Codable, Sendable {
        /// Its key is held (as far as the server knows).
        case active
        /// A Sync SPC said its key expired or is gone: the download no longer counts.
        case released
    }

    /// The content ID (32 hex digits), one per download.
    public var contentID: String
    /// The asset.
    public var assetID: String
    /// The entitlement's subject.
    public var subject: String
    /// The device (the SPC's HU, hex).
    public var device: String
    /// When the key was issued.
    public var issued: Date
    /// Storage duration (0: no limit).
    public var storageSeconds: UInt32
    /// Playback duration (0: no limit).
    public var playbackSeconds: UInt32
    /// The last Sync SPC's time.
    public var lastSync: Date?
    /// The last Sync SPC's remaining validity (0xFFFFFFFF: no expiry).
    public var durationToExpiry: UInt32?
    /// Active or released.
    public var state: State

    /// A record of a key just issued.
    public init(contentID: String, assetID: String, subject: String, device: String, issued: Date, storageSeconds: UInt32, playbackSeconds: UInt32,
                lastSync: Date? = nil, durationToExpiry: UInt32? = nil, state: State = .active) {
        self.contentID = contentID
        self.assetID = assetID
        self.subject = subject
        self.device = device
        self.issued = issued
        self.storageSeconds = storageSeconds
        self.playbackSeconds = playbackSeconds
        self.lastSync = lastSync
        self.durationToExpiry = durationToExpiry
        self.state = state
    }

    /// This record after a Sync SPC at `now` that says `durationToExpiry` (0 releases it; a released one stays so).
    public func synced(durationToExpiry: UInt32, at now: Date) -> OfflineKeyRecord {
        var record = self
        record.lastSync = now
        record.durationToExpiry = durationToExpiry
        if durationToExpiry == 0 { record.state = .released }
        return record
    }
}

/// Where a FairPlay lease takes its stream slot (the FairPlay Streaming Programming Guide, "Secure Lease": "the server
/// associates a slot to a
/// device"; seam: the backplane's stream slots).
public protocol LeaseSlots: Sendable {
    /// Takes, or renews, the slot `subject`'s device `device` (the SPC's HU, hex) holds to play `asset`, for a lease
    /// of `seconds`; ``LicensingError/streamLimit`` when the account plays as many streams as it may.
    func lease(subject: String, device: String, asset: String, seconds: UInt32, at now: Date) async throws(LicensingError)
}

/// The rules of FairPlay rentals and leases, as values.
package enum FairPlayLeaseRules {
    /// Whether a license under `policy` to `target` binds its rental to the device: a combined rental and lease
    /// (the FairPlay Streaming Programming Guide: "the mechanism by which leasing registers the playback device may be
    /// used to limit the rental to
    /// that device only"), to a device — an AV adapter's ID is not a device's and is not used to manage devices.
    package static func bindsRental(leaseSeconds: UInt32?, rentalSeconds: UInt32?, toDevice: Bool) -> Bool {
        leaseSeconds != nil && rentalSeconds != nil && toDevice
    }

    /// Whether a rental bound to `bound` until `until` refuses `device` at `now`: another device, while it holds.
    package static func refuses(bound: String, until: Date, device: String, at now: Date) -> Bool {
        bound != device && now < until
    }
}
