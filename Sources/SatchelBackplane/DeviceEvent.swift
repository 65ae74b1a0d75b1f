import Foundation
import SatchelBytes

/// What a device reports to the backplane: the download engine's, the
/// agent's and the playback proxy's events, with a stable code each.
public enum DeviceEventKind: String, Codable, Sendable, CaseIterable {
    /// An asset was added to the download queue.
    case downloadQueued = "download-queued"
    /// An asset's download started (or resumed).
    case downloadStarted = "download-started"
    /// An asset finished downloading.
    case downloadCompleted = "download-completed"
    /// A download attempt failed (`reason`: the typed failure).
    case downloadError = "download-error"
    /// An asset's error count was cleared, so it is tried again.
    case maxErrorsReset = "max-errors-reset"
    /// The device's downloads were reset (a remote wipe, or everything deleted).
    case reset
    /// An asset was deleted from the device.
    case deleted
    /// An asset's window closed and its files were deleted.
    case expired
    /// Playback of an asset started.
    case playStart = "play-start"
    /// Playback of an asset stopped (`seconds`: how long it played).
    case playStop = "play-stop"
    /// A license was acquired.
    case licenseAcquired = "license-acquired"
    /// A license was renewed.
    case licenseRenewed = "license-renewed"
    /// A license was released.
    case licenseReleased = "license-released"
    /// A backplane command was applied (`reason`: its action).
    case commandApplied = "command-applied"
    /// A feed's new item was enqueued by a subscription (`reason`: the feed).
    case subscriptionAdded = "subscription-added"
    /// A feed's item was deleted to make room for a newer one (`reason`: the feed).
    case subscriptionReset = "subscription-reset"
    /// A feed's new item was made but not downloaded: the feed's quota is full (`reason`: the feed).
    case subscriptionDeferred = "subscription-deferred"
    /// A subscriptions' sync ended (`detail`: what it added, deleted and deferred).
    case subscriptionSynced = "subscription-synced"
    /// A backplane answer the device could not verify was refused, nothing of it applied (`reason`: the request and why).
    case answerRefused = "answer-refused"

    /// The events the seed says cannot be turned off: download queued, start, complete, error, max errors reset, reset.
    public var isMandatory: Bool {
        switch self {
        case .downloadQueued, .downloadStarted, .downloadCompleted, .downloadError, .maxErrorsReset, .reset: return true
        default: return false
        }
    }
}

/// One event as the device recorded it. `eventID` is the device's own (a UUID): sent again after a lost answer,
/// the backplane keeps it once.
public struct DeviceEvent: Codable, Sendable, Equatable {
    /// The device's identifier for the event (lowercase letters, digits and dashes, 8 to 64).
    public var eventID: String
    /// What happened.
    public var kind: DeviceEventKind
    /// When, by the device's clock.
    public var time: Date
    /// The asset it concerns, when one.
    public var assetID: String?
    /// A typed reason (a download error's code, a command's action).
    public var reason: String?
    /// Seconds (played, for play stop).
    public var seconds: Double?
    /// More, as a person reads it.
    public var detail: String?

    /// An event.
    public init(eventID: String = SecureRandom.uuid().uuidString.lowercased(), kind: DeviceEventKind, time: Date, assetID: String? = nil, reason: String? = nil,
                seconds: Double? = nil, detail: String? = nil) {
        self.eventID = eventID
        self.kind = kind
        self.time = time
        self.assetID = assetID
        self.reason = reason
        self.seconds = seconds
        self.detail = detail
    }

    /// The event checked: its ID's form, the asset's, reason's and detail's lengths, seconds finite and not negative.
    public func validated() throws(BackplaneError) -> DeviceEvent {
        guard (8...64).contains(eventID.utf8.count), eventID.utf8.allSatisfy(Self.isIDByte) else {
            throw .badRequest("an event ID is 8 to 64 lowercase letters, digits and dashes")
        }
        if let assetID, assetID.isEmpty || assetID.utf8.count > 200 { throw .badRequest("an event's assetID is 1 to 200 bytes") }
        if let reason, reason.utf8.count > 100 { throw .badRequest("an event's reason is at most 100 bytes") }
        if let detail, detail.utf8.count > 500 { throw .badRequest("an event's detail is at most 500 bytes") }
        if let seconds, !seconds.isFinite || !(0...10_000_000).contains(seconds) { throw .badRequest("an event's seconds are 0 to 10,000,000") }
        guard time.timeIntervalSince1970.isFinite else { throw .badRequest("an event's time is a date") }
        return self
    }

    /// About the bytes the event takes in the history: its text fields and a fixed share for the rest of the row.
    public var storedSize: Int {
        96 + eventID.utf8.count + kind.rawValue.utf8.count + (assetID?.utf8.count ?? 0) + (reason?.utf8.count ?? 0) + (detail?.utf8.count ?? 0)
    }

    private static func isIDByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "-") || (0x30...0x39).contains(byte) || (0x61...0x7A).contains(byte)
    }
}

/// An event as the backplane stored it: with the device, its user and when it arrived.
public struct RecordedEvent: Codable, Sendable, Equatable {
    /// The event.
    public var event: DeviceEvent
    /// The device that reported it.
    public var deviceID: String
    /// The device's user.
    public var user: String
    /// When the backplane received it.
    public var received: Date

    /// A recorded event.
    public init(event: DeviceEvent, deviceID: String, user: String, received: Date) {
        self.event = event
        self.deviceID = deviceID
        self.user = user
        self.received = received
    }
}

/// What events to read or count: each field set narrows the selection (by the device's event time).
public struct EventQuery: Codable, Sendable, Equatable {
    /// One device's.
    public var device: String?
    /// One user's.
    public var user: String?
    /// One kind.
    public var kind: DeviceEventKind?
    /// One asset's.
    public var asset: String?
    /// From this time on (inclusive).
    public var since: Date?
    /// Before this time.
    public var until: Date?

    /// A query; nil fields select everything.
    public init(device: String? = nil, user: String? = nil, kind: DeviceEventKind? = nil, asset: String? = nil, since: Date? = nil, until: Date? = nil) {
        self.device = device
        self.user = user
        self.kind = kind
        self.asset = asset
        self.since = since
        self.until = until
    }
}

/// What events are counted by.
public enum EventGrouping: String, Codable, Sendable, CaseIterable {
    /// By event kind.
    case kind
    /// By user.
    case user
    /// By asset.
    case asset
    /// By device.
    case device
    /// By reason (a download error's code, a command's action).
    case reason
}

/// A count of events: `[{"kind": …, "count": N}]` (the key named by the grouping).
public struct EventCount: Sendable, Equatable {
    /// What was counted by.
    public var grouping: EventGrouping
    /// The group's value (an event without an asset counts under "").
    public var key: String
    /// How many.
    public var count: Int

    /// A count.
    public init(grouping: EventGrouping, key: String, count: Int) {
        self.grouping = grouping
        self.key = key
        self.count = count
    }
}

extension EventCount: Codable {
    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        count = try container.decode(Int.self, forKey: Key(stringValue: "count"))
        guard let grouping = EventGrouping.allCases.first(where: { container.contains(Key(stringValue: $0.rawValue)) }) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a count names kind, user, asset, device or reason"))
        }
        self.grouping = grouping
        key = try container.decode(String.self, forKey: Key(stringValue: grouping.rawValue))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(key, forKey: Key(stringValue: grouping.rawValue))
        try container.encode(count, forKey: Key(stringValue: "count"))
    }
}

/// Which events a device records: every mandatory one, and the others unless the backplane's settings turned their
/// kind off.
public enum EventRules {
    /// Whether `kind` is recorded when `disabled` kinds are turned off.
    public static func records(_ kind: DeviceEventKind, disabled: [DeviceEventKind]?) -> Bool {
        kind.isMandatory || !(disabled ?? []).contains(kind)
    }

    /// The most events one batch carries.
    public static let batchLimit = 500
    /// The newest events a count by user, asset, device, kind or reason reads, at most.
    public static let countedEvents = 100_000
}

/// `POST /backplane/events`' answer.
public struct EventBatchAnswer: Codable, Sendable, Equatable {
    /// Events in the batch.
    public var received: Int
    /// Of those, the ones not kept before (the rest were sent again).
    public var recorded: Int

    /// An answer.
    public init(received: Int, recorded: Int) {
        self.received = received
        self.recorded = recorded
    }
}
