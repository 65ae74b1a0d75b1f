import Foundation

/// A feed a device can subscribe to: new items arrive on subscribed devices by
/// themselves.
public struct Feed: Codable, Sendable, Equatable {
    /// The feed's identifier (letters, digits, `-`, `_`, `.`; 1 to 100).
    public var feedID: String
    /// Its title.
    public var title: String
    /// When it was made.
    public var created: Date
    /// How many items it holds.
    public var items: Int

    /// A feed.
    public init(feedID: String, title: String, created: Date, items: Int = 0) {
        self.feedID = feedID
        self.title = title
        self.created = created
        self.items = items
    }

    /// Checks a feed ID: letters, digits, `-`, `_` and `.`, 1 to 100 bytes.
    public static func checked(_ feedID: String) throws(BackplaneError) -> String {
        guard (1...100).contains(feedID.utf8.count),
              feedID.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0)) }) else {
            throw .badRequest("a feed ID is 1 to 100 letters, digits, -, _ and .")
        }
        return feedID
    }
}

/// One item of a feed: an asset to download, numbered in the order it was added.
public struct FeedItem: Codable, Sendable, Equatable {
    /// The feed.
    public var feedID: String
    /// Its place among the feed's items: 1, 2, 3, … (a device takes up after the last it had).
    public var sequence: Int64
    /// The asset ID it is downloaded as.
    public var assetID: String
    /// Where to download it from (http or https); nil when the feed names the asset alone and the app's
    /// subscription data source supplies the rest (the custom data source).
    public var url: String?
    /// Its title.
    public var title: String?
    /// When it was published (newest first on the devices).
    public var published: Date
    /// When it stops being offered (nil: never).
    public var expires: Date?
    /// The app's own values.
    public var metadata: [String: String]?

    /// An item.
    public init(feedID: String, sequence: Int64 = 0, assetID: String, url: String?, title: String? = nil, published: Date, expires: Date? = nil,
                metadata: [String: String]? = nil) {
        self.feedID = feedID
        self.sequence = sequence
        self.assetID = assetID
        self.url = url
        self.title = title
        self.published = published
        self.expires = expires
        self.metadata = metadata
    }

    /// The item checked: an asset ID of 1 to 200 bytes, an http(s) URL of at most 4096 bytes (when there is one), a
    /// title of at most 500, an expiry after publication, at most 32 metadata values of 1 to 100 / at most 1000 bytes.
    public func validated() throws(BackplaneError) -> FeedItem {
        guard !assetID.isEmpty, assetID.utf8.count <= 200 else { throw .badRequest("an item's assetID is 1 to 200 bytes") }
        if let url, !Self.isDownloadURL(url) { throw .badRequest("an item's url is an http or https URL of at most 4096 bytes") }
        if let title, title.utf8.count > 500 { throw .badRequest("an item's title is at most 500 bytes") }
        if let expires, expires <= published { throw .badRequest("an item expires after it is published") }
        if let metadata {
            guard metadata.count <= 32, metadata.allSatisfy({ (1...100).contains($0.key.utf8.count) && $0.value.utf8.count <= 1000 }) else {
                throw .badRequest("an item's metadata is at most 32 values, names of 1 to 100 bytes, values of at most 1000")
            }
        }
        return self
    }

    /// Whether `url` is an http or https URL with a host, of at most 4096 bytes.
    public static func isDownloadURL(_ url: String) -> Bool {
        guard url.utf8.count <= 4096, let parsed = URL(string: url) else { return false }
        return ["http", "https"].contains(parsed.scheme?.lowercased() ?? "") && parsed.host != nil
    }

    /// Whether the item is offered at `now` (an expired item is not downloaded).
    public func isOffered(at now: Date) -> Bool { expires.map { now < $0 } ?? true }
}

/// An item a device holds already (downloaded or queued) that belongs to the feed: counted against its quota.
public struct HeldItem: Sendable, Equatable {
    /// The asset ID.
    public var assetID: String
    /// When it was published.
    public var published: Date

    /// A held item.
    public init(assetID: String, published: Date) {
        self.assetID = assetID
        self.published = published
    }
}

/// What a subscribed device does with the items new to it.
public struct SubscriptionPlan: Sendable, Equatable {
    /// To enqueue, newest first.
    public var enqueue: [FeedItem] = []
    /// Held items to delete to make room (autodelete), oldest first.
    public var delete: [String] = []
    /// Items left for later: the quota is full and nothing older may go (the deferred notice).
    public var deferred: [FeedItem] = []

    /// A plan.
    public init(enqueue: [FeedItem] = [], delete: [String] = [], deferred: [FeedItem] = []) {
        self.enqueue = enqueue
        self.delete = delete
        self.deferred = deferred
    }
}

/// Subscriptions' rules as values (`maximumSubscriptionItemsPerFeed`, `autodeleteOldItems`).
public enum SubscriptionRules {
    /// The plan for `newItems` on a device that holds `held` of the feed: items offered at `now` and not held already,
    /// newest first, enqueued while the feed's items on the device are fewer than `maxItems` (0: no limit); past it,
    /// with `autodelete`, the oldest held item older than the new one is deleted to make room, else the new one is
    /// deferred.
    public static func plan(newItems: [FeedItem], held: [HeldItem], maxItems: Int, autodelete: Bool, at now: Date) -> SubscriptionPlan {
        let heldIDs = Set(held.map(\.assetID))
        var seen = Set<String>()
        let fresh = newItems.filter { $0.isOffered(at: now) && !heldIDs.contains($0.assetID) && seen.insert($0.assetID).inserted }
            .sorted { ($0.published, $0.sequence) > ($1.published, $1.sequence) }
        var holding = held.sorted { ($0.published, $0.assetID) < ($1.published, $1.assetID) }  // oldest first
        var plan = SubscriptionPlan()
        for item in fresh {
            if maxItems <= 0 || holding.count < maxItems {
                plan.enqueue.append(item)
                holding.append(HeldItem(assetID: item.assetID, published: item.published))
                holding.sort { ($0.published, $0.assetID) < ($1.published, $1.assetID) }
            } else if autodelete, let oldest = holding.first, oldest.published < item.published {
                // Items are taken newest first, so the oldest is always one the device held before.
                holding.removeFirst()
                plan.delete.append(oldest.assetID)
                plan.enqueue.append(item)
                holding.append(HeldItem(assetID: item.assetID, published: item.published))
                holding.sort { ($0.published, $0.assetID) < ($1.published, $1.assetID) }
            } else {
                plan.deferred.append(item)
            }
        }
        return plan
    }
}
