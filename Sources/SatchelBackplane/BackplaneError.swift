import SatchelBytes

/// Why the backplane refused or failed, with a stable code.
public enum BackplaneError: ProblemConvertible, Equatable {
    /// The request is malformed (a bad device name, a negative limit, …).
    case badRequest(String)
    /// No such device (or user).
    case unknownDevice(String)
    /// The device was remotely killed: it is refused from then on.
    case deviceKilled(String)
    /// Enabling this device would put its user over the limit of download-enabled devices.
    case deviceLimitReached(user: String, limit: Int)
    /// No such command for this device.
    case unknownCommand(String)
    /// Another device has this external ID.
    case externalIDTaken
    /// The stream slot's lease ended (or it was released): the device asks for a new slot.
    case slotLost(String)
    /// No such feed.
    case unknownFeed(String)
    /// A feed of this ID exists.
    case feedExists(String)
    /// The feed offers this asset already.
    case feedItemExists(String)
    /// The device is not subscribed to this feed.
    case notSubscribed(String)
    /// The device follows as many feeds as it may.
    case subscriptionLimit(Int)
    /// The store failed.
    case storage(String)
    /// The device has sent more events than its budget allows (``EventQuota``): send them again after this many seconds.
    case tooManyEvents(retryAfter: Int)

    /// A stable identifier.
    public var code: String {
        switch self {
        case .badRequest: return "backplane-bad-request"
        case .unknownDevice: return "unknown-device"
        case .deviceKilled: return "device-killed"
        case .deviceLimitReached: return "device-limit-reached"
        case .unknownCommand: return "unknown-command"
        case .externalIDTaken: return "external-id-taken"
        case .slotLost: return "slot-lost"
        case .unknownFeed: return "unknown-feed"
        case .feedExists: return "feed-exists"
        case .feedItemExists: return "feed-item-exists"
        case .notSubscribed: return "not-subscribed"
        case .subscriptionLimit: return "subscription-limit"
        case .storage: return "backplane-storage"
        case .tooManyEvents: return "too-many-events"
        }
    }

    /// 400 malformed, 404 unknown, 403 killed, 409 over the limit or taken, 410 a slot lost, 500 storage.
    public var httpStatus: Int {
        switch self {
        case .badRequest: return 400
        case .unknownDevice, .unknownCommand, .unknownFeed, .notSubscribed: return 404
        case .deviceKilled: return 403
        case .deviceLimitReached, .externalIDTaken, .feedExists, .feedItemExists, .subscriptionLimit: return 409
        case .slotLost: return 410
        case .storage: return 500
        case .tooManyEvents: return 429
        }
    }

    public var description: String {
        switch self {
        case let .badRequest(reason): return "bad request: \(reason)"
        case let .unknownDevice(device): return "no device \(device)"
        case let .deviceKilled(device): return "device \(device) was remotely killed"
        case let .deviceLimitReached(user, limit): return "device limit reached: user \(user) may have \(limit) download-enabled device\(limit == 1 ? "" : "s")"
        case let .unknownCommand(id): return "no command \(id) for this device"
        case .externalIDTaken: return "another device has this external ID"
        case let .unknownFeed(feed): return "no feed \(feed.prefix(100))"
        case let .feedExists(feed): return "a feed \(feed.prefix(100)) exists already"
        case let .feedItemExists(asset): return "the feed offers \(asset.prefix(200)) already"
        case let .notSubscribed(feed): return "the device is not subscribed to \(feed.prefix(100))"
        case let .subscriptionLimit(limit): return "a device follows at most \(limit) feeds"
        case let .slotLost(slot): return "stream slot \(slot) is no longer held (its lease ended, or it was released)"
        case let .storage(reason): return "backplane storage: \(reason)"
        case let .tooManyEvents(wait): return "this device has sent more events than its budget allows; send them again in \(wait) s"
        }
    }
}
