import Foundation

/// A concurrent-stream slot (the FairPlay Streaming Programming Guide, "Secure Lease"; the per-account limits): one
/// playback of one asset on one
/// device, held while its lease lasts. The device renews the lease while it plays and releases the slot when it stops;
/// a device that goes away frees its slot when the lease ends.
public struct StreamSlot: Codable, Sendable, Equatable {
    /// The slot's identifier (the device renews and releases it by this).
    public var slotID: String
    /// The account the slot counts against.
    public var user: String
    /// The device that plays.
    public var deviceID: String
    /// The asset played.
    public var assetID: String
    /// When the slot was taken.
    public var acquired: Date
    /// When the lease ends unless renewed.
    public var expires: Date

    /// A slot.
    public init(slotID: String, user: String, deviceID: String, assetID: String, acquired: Date, expires: Date) {
        self.slotID = slotID
        self.user = user
        self.deviceID = deviceID
        self.assetID = assetID
        self.acquired = acquired
        self.expires = expires
    }

    /// Whether the lease still holds at `now` (it ends at `expires`: a slot whose lease ends now is free).
    public func isHeld(at now: Date) -> Bool { now < expires }
}

/// Why a stream slot is refused, with a stable code.
public enum SlotRefusal: String, Codable, Sendable, CaseIterable {
    /// The account plays as many streams at once as it may.
    case streamLimit = "stream-limit"
    /// The device was remotely killed.
    case deviceKilled = "device-killed"

    /// The reason as a person reads it.
    public var text: String {
        switch self {
        case .streamLimit: return "this account plays as many streams at once as it may"
        case .deviceKilled: return "this device was remotely killed"
        }
    }
}

/// What the backplane decides about stream slots, as functions of what it knows (no I/O; the store calls these inside
/// the transaction that holds the user's row, so the limit holds across nodes).
package enum StreamSlotRules {
    /// The lease a slot holds for when the settings name none.
    package static let defaultLease: UInt32 = 60

    /// Whether `device` may take one more slot while its account holds `heldSlots` (leases not ended): a killed device
    /// may not; else the account must be under its stream limit (nil: no limit). Nil: it may.
    package static func refusal(device: BackplaneDevice, heldSlots: Int, limits: BackplaneLimits) -> SlotRefusal? {
        guard device.state == .active else { return .deviceKilled }
        return refusal(heldSlots: heldSlots, limits: limits)
    }

    /// Whether a holder that is not a backplane device (a FairPlay device by its HU) may take one more slot while
    /// the account holds `heldSlots`: only under its stream limit. Nil: it may.
    package static func refusal(heldSlots: Int, limits: BackplaneLimits) -> SlotRefusal? {
        if let most = limits.maxStreams, heldSlots >= most { return .streamLimit }
        return nil
    }

    /// When a lease taken or renewed at `now` ends: `lease` seconds later.
    package static func leaseEnd(from now: Date, lease: UInt32) -> Date {
        now.addingTimeInterval(TimeInterval(lease))
    }

    /// The slot renewed at `now`: its lease must still hold (one that ended is free and may be taken by another
    /// stream already: the device asks for a new slot instead).
    package static func renewed(_ slot: StreamSlot, at now: Date, lease: UInt32) throws(BackplaneError) -> StreamSlot {
        guard slot.isHeld(at: now) else { throw .slotLost(slot.slotID) }
        var renewed = slot
        renewed.expires = leaseEnd(from: now, lease: lease)
        return renewed
    }
}

/// `POST /backplane/slots`' answer: the slot taken, or why not.
public struct StreamSlotAnswer: Codable, Sendable, Equatable {
    /// The asset asked about.
    public var assetID: String
    /// Whether a slot was taken.
    public var granted: Bool
    /// The slot (when granted).
    public var slot: StreamSlot?
    /// The lease's length in seconds (the device renews well before it ends).
    public var leaseSeconds: UInt32
    /// Why not (absent when granted).
    public var reason: SlotRefusal?
    /// The reason as a person reads it.
    public var detail: String?

    /// A slot taken.
    public init(granted slot: StreamSlot, leaseSeconds: UInt32) {
        assetID = slot.assetID
        granted = true
        self.slot = slot
        self.leaseSeconds = leaseSeconds
    }

    /// A slot refused.
    public init(assetID: String, refused reason: SlotRefusal, leaseSeconds: UInt32) {
        self.assetID = assetID
        granted = false
        self.reason = reason
        detail = reason.text
        self.leaseSeconds = leaseSeconds
    }
}
