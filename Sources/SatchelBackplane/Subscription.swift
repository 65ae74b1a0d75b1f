import Foundation

/// A device's subscription to a feed: the backplane keeps which device follows which
/// feed, its quota settings, and the last item the device said it applied.
public struct Subscription: Codable, Sendable, Equatable {
    /// The feed.
    public var feedID: String
    /// The device.
    public var deviceID: String
    /// The most of the feed's items the device keeps (0: no limit; the `maximumSubscriptionItemsPerFeed`).
    public var maxItems: Int
    /// Past the quota, delete the oldest to make room (true) or defer the new item (false;
    /// `autodeleteOldItems`).
    public var autodelete: Bool
    /// The number of the last item the device applied.
    public var applied: Int64
    /// When the device subscribed.
    public var created: Date

    /// A subscription.
    public init(feedID: String, deviceID: String, maxItems: Int, autodelete: Bool, applied: Int64 = 0, created: Date) {
        self.feedID = feedID
        self.deviceID = deviceID
        self.maxItems = maxItems
        self.autodelete = autodelete
        self.applied = applied
        self.created = created
    }
}

/// `POST /backplane/subscriptions`' body: the feed, and the quota settings (subscribing again changes them).
public struct SubscriptionRequest: Codable, Sendable, Equatable {
    /// The feed.
    public var feedID: String
    /// The quota (0: no limit).
    public var maxItems: Int
    /// What a full quota does with a new item.
    public var autodelete: Bool

    /// The most feeds a device follows.
    public static let maximumFeeds = 100
    /// The largest quota.
    public static let maximumItems = 10_000

    /// A request; the defaults: no limit, autodelete on.
    public init(feedID: String, maxItems: Int = 0, autodelete: Bool = true) {
        self.feedID = feedID
        self.maxItems = maxItems
        self.autodelete = autodelete
    }

    /// The request checked: a feed ID's form, a quota of 0 to ``maximumItems``.
    public func validated() throws(BackplaneError) -> SubscriptionRequest {
        _ = try Feed.checked(feedID)
        guard (0...Self.maximumItems).contains(maxItems) else { throw .badRequest("maxItems is 0 (no limit) to \(Self.maximumItems)") }
        return self
    }
}

/// `POST /backplane/feeds/sync`'s body: the last item the device applied of each feed (the backplane keeps
/// the highest it was told), and, for a forced sync, the items published since a date — of the subscribed feeds,
/// or of every feed — to list, not to download.
public struct SubscriptionSyncRequest: Codable, Sendable, Equatable {
    /// Feed → the number of the last item applied.
    public var applied: [String: Int64]
    /// List the items published since this date.
    public var since: Date?
    /// With `since`: of every feed, not only the subscribed ones.
    public var allFeeds: Bool

    /// A request.
    public init(applied: [String: Int64] = [:], since: Date? = nil, allFeeds: Bool = false) {
        self.applied = applied
        self.since = since
        self.allFeeds = allFeeds
    }

    /// The request checked: at most ``SubscriptionRequest/maximumFeeds`` feeds, numbers not negative.
    public func validated() throws(BackplaneError) -> SubscriptionSyncRequest {
        guard applied.count <= SubscriptionRequest.maximumFeeds else { throw .badRequest("applied names at most \(SubscriptionRequest.maximumFeeds) feeds") }
        for (feed, sequence) in applied {
            _ = try Feed.checked(feed)
            guard sequence >= 0 else { throw .badRequest("an applied item's number is 0 or more") }
        }
        return self
    }
}

/// A subscribed feed's new items, as a sync delivers them.
public struct FeedDelivery: Codable, Sendable, Equatable {
    /// The subscription (its settings and the last item applied, which the items follow).
    public var subscription: Subscription
    /// The items after it, in the order added.
    public var items: [FeedItem]
    /// More items follow these (the device syncs again once it applied these).
    public var more: Bool

    /// A delivery.
    public init(subscription: Subscription, items: [FeedItem], more: Bool) {
        self.subscription = subscription
        self.items = items
        self.more = more
    }
}

/// `POST /backplane/feeds/sync`'s answer.
public struct SubscriptionSyncAnswer: Codable, Sendable, Equatable {
    /// Each subscribed feed with the items new to the device.
    public var feeds: [FeedDelivery]
    /// A forced sync's list: the items published since its date (not downloaded by themselves).
    public var listing: [FeedItem]?
    /// The server's time.
    public var serverTime: Date

    /// An answer.
    public init(feeds: [FeedDelivery], listing: [FeedItem]? = nil, serverTime: Date) {
        self.feeds = feeds
        self.listing = listing
        self.serverTime = serverTime
    }
}

/// A device's POST whose body is signed — a subscription, a subscriptions' sync, a batch of events (a JSON array of
/// ``DeviceEvent``) —: the signed request (its `bodyDigest` the SHA-256 of `body`) and the body as JSON text, so that
/// the signature covers exactly the bytes sent.
public struct DeviceBodyEnvelope: Codable, Sendable, Equatable {
    /// The signed device request.
    public var request: String
    /// The JSON body.
    public var body: String

    /// An envelope.
    public init(request: String, body: String) {
        self.request = request
        self.body = body
    }
}
