import FluentKit
import Foundation
import SatchelBytes
import SQLKit

/// Where the backplane keeps feeds and their items: the seam between the routes and a database.
public protocol FeedStoring: Sendable {
    /// Makes a feed (`feedExists` when the ID is taken).
    func create(_ feedID: String, title: String, at now: Date) async throws(BackplaneError) -> Feed
    /// Every feed, by ID, with its item count.
    func feeds(_ page: ListingRequest) async throws(BackplaneError) -> ListingPage<Feed>
    /// Adds an item to a feed, numbered after its last (`feedItemExists` when the feed offers the asset already).
    func add(_ item: FeedItem) async throws(BackplaneError) -> FeedItem
    /// A feed's items after the `after`-th, in order, at most `limit`.
    func items(feed: String, page: ListingRequest) async throws(BackplaneError) -> ListingPage<FeedItem>
    /// Subscribes `device` to a feed, or changes its quota settings when it is subscribed (`unknownFeed`,
    /// `subscriptionLimit`).
    func subscribe(device: String, _ request: SubscriptionRequest, at now: Date) async throws(BackplaneError) -> Subscription
    /// Ends a subscription (`notSubscribed`).
    func unsubscribe(device: String, feed: String) async throws(BackplaneError)
    /// A device's subscriptions, by feed.
    func subscriptions(device: String) async throws(BackplaneError) -> [Subscription]
    /// A feed's subscribers, by device.
    func subscribers(feed: String, page: ListingRequest) async throws(BackplaneError) -> ListingPage<Subscription>
    /// Keeps the last item `device` applied of each feed (`applied`; never lowered), then answers each subscribed feed
    /// with the items after it, in order, as many as an answer holds (`more` when others follow).
    func deliver(device: String, applied: [String: Int64]) async throws(BackplaneError) -> [FeedDelivery]
    /// The items published since `since`, newest first, of the device's feeds or of every feed (a forced sync's list).
    func listing(device: String, since: Date, allFeeds: Bool) async throws(BackplaneError) -> [FeedItem]
}

/// The feeds in the backplane's database: an item is numbered under its feed's row (taken `FOR UPDATE` on
/// PostgreSQL), so two nodes adding to one feed give each item its own number.
public struct FluentFeedStore: FeedStoring {
    let store: FluentBackplaneStore

    /// The feeds on `database` (migrated with ``BackplaneMigrations/all``).
    public init(database: any Database) {
        store = FluentBackplaneStore(database: database)
    }

    public func create(_ feedID: String, title: String, at now: Date) async throws(BackplaneError) -> Feed {
        let id = try Feed.checked(feedID)
        guard !title.isEmpty, title.utf8.count <= 200 else { throw .badRequest("a feed's title is 1 to 200 bytes") }
        return try await store.transaction("make the feed") { database async throws in
            if try await BackplaneFeedModel.find(id, on: database) != nil { throw BackplaneError.feedExists(id) }
            let model = BackplaneFeedModel()
            model.id = id
            model.title = title
            model.created = now
            model.nextSequence = 1
            try await model.create(on: database)
            return Feed(feedID: id, title: title, created: now)
        }
    }

    public func feeds(_ page: ListingRequest) async throws(BackplaneError) -> ListingPage<Feed> {
        try await store.transaction("list the feeds", atomic: false) { database async throws in
            var query = BackplaneFeedModel.query(on: database)
            if let after = page.afterKey?.first { query = query.filter(\.$id > after) }
            if let prefix = page.prefix { query = query.filter(\.$id >= prefix) }
            var feeds = try await query.sort(\.$id).limit(page.limit + 1).all()
                .map { Feed(feedID: $0.id ?? "", title: $0.title, created: $0.created, items: Int($0.nextSequence - 1)) }
            if let prefix = page.prefix, let end = feeds.firstIndex(where: { !$0.feedID.hasPrefix(prefix) }) { feeds.removeSubrange(end...) }
            return ListingPage(reading: feeds, limit: page.limit, listing: Feed.listing) { [$0.feedID] }
        }
    }

    public func add(_ item: FeedItem) async throws(BackplaneError) -> FeedItem {
        let checked = try item.validated()
        let feed = try Feed.checked(item.feedID)
        return try await store.transaction("add the item") { database async throws in
            var item = checked
            guard let sql = database as? any SQLDatabase else { throw BackplaneError.storage("the backplane needs an SQL database") }
            if sql.dialect.name == "postgresql" {
                try await sql.raw("SELECT feed_id FROM \(ident: BackplaneFeedModel.schema) WHERE feed_id = \(bind: feed) FOR UPDATE").run()
            }
            guard let model = try await BackplaneFeedModel.find(feed, on: database) else { throw BackplaneError.unknownFeed(feed) }
            if try await BackplaneFeedItemModel.query(on: database).filter(\.$feed == feed).filter(\.$asset == item.assetID).count() > 0 {
                throw BackplaneError.feedItemExists(item.assetID)
            }
            item.sequence = model.nextSequence
            model.nextSequence += 1
            try await model.save(on: database)
            try await BackplaneFeedItemModel(item).create(on: database)
            try await BackplaneRowLocks.notify("feed:" + feed, on: database)
            return item
        }
    }

    public func items(feed: String, page: ListingRequest) async throws(BackplaneError) -> ListingPage<FeedItem> {
        let after = try FeedItem.sequence(after: page)
        return try await store.transaction("read the items", atomic: false) { database async throws in
            guard try await BackplaneFeedModel.find(feed, on: database) != nil else { throw BackplaneError.unknownFeed(feed) }
            let items = try await BackplaneFeedItemModel.query(on: database).filter(\.$feed == feed).filter(\.$sequence > after).sort(\.$sequence)
                .limit(page.limit + 1).all().map { try $0.value() }
            return ListingPage(reading: items, limit: page.limit, listing: FeedItem.listing) { [String($0.sequence)] }
        }
    }
}

/// A feed: its title and the number its next item gets.
final class BackplaneFeedModel: Model, @unchecked Sendable {
    static let schema = "backplane_feeds"

    @ID(custom: "feed_id", generatedBy: .user) var id: String?
    @Field(key: "title") var title: String
    @Field(key: "created_at") var created: Date
    @Field(key: "next_sequence") var nextSequence: Int64

    init() {}
}

/// An item of a feed.
final class BackplaneFeedItemModel: Model, @unchecked Sendable {
    static let schema = "backplane_feed_items"

    @ID(custom: "item_id", generatedBy: .user) var id: String?
    @Field(key: "feed_id") var feed: String
    @Field(key: "sequence") var sequence: Int64
    @Field(key: "asset_id") var asset: String
    @OptionalField(key: "url") var url: String?
    @OptionalField(key: "title") var title: String?
    @Field(key: "published_at") var published: Date
    @OptionalField(key: "expires_at") var expires: Date?
    /// The metadata as JSON.
    @OptionalField(key: "metadata") var metadata: String?

    init() {}

    init(_ item: FeedItem) throws {
        id = item.feedID + ":" + String(item.sequence)
        feed = item.feedID
        sequence = item.sequence
        asset = item.assetID
        url = item.url
        title = item.title
        published = item.published
        expires = item.expires
        metadata = try item.metadata.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }
    }

    func value() throws -> FeedItem {
        FeedItem(feedID: feed, sequence: sequence, assetID: asset, url: url, title: title, published: published, expires: expires,
                 metadata: try metadata.map { try JSONDecoder().decode([String: String].self, from: Data($0.utf8)) })
    }
}

/// Feeds and their items (one asset once per feed).
public struct AddFeeds: AsyncMigration {
    /// The migration.
    public init() {}

    public func prepare(on database: any Database) async throws {
        try await database.schema(BackplaneFeedModel.schema)
            .field("feed_id", .string, .identifier(auto: false)).field("title", .string, .required)
            .field("created_at", .datetime, .required).field("next_sequence", .int64, .required)
            .create()
        try await database.schema(BackplaneFeedItemModel.schema)
            .field("item_id", .string, .identifier(auto: false)).field("feed_id", .string, .required).field("sequence", .int64, .required)
            .field("asset_id", .string, .required).field("url", .string).field("title", .string)
            .field("published_at", .datetime, .required).field("expires_at", .datetime).field("metadata", .string)
            .unique(on: "feed_id", "sequence").unique(on: "feed_id", "asset_id")
            .create()
    }

    public func revert(on database: any Database) async throws {
        for schema in [BackplaneFeedItemModel.schema, BackplaneFeedModel.schema] { try await database.schema(schema).delete() }
    }
}

extension Feed {
    /// The feeds listing's name in its cursors.
    public static let listing = "feeds"
}

extension FeedItem {
    /// The items listing's name in its cursors.
    public static let listing = "items"

    /// The sequence a page of items starts after (0 on the first page).
    static func sequence(after page: ListingRequest) throws(BackplaneError) -> Int64 {
        guard let key = page.afterKey?.first else { return 0 }
        guard let sequence = Int64(key), sequence >= 0 else { throw .badRequest("the cursor (after) is not one of this feed's items") }
        return sequence
    }
}

extension Subscription {
    /// The subscribers listing's name in its cursors.
    public static let listing = "subscribers"
}
