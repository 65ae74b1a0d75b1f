import FluentKit
import Foundation
import SatchelBytes
import SQLKit

/// Which device follows which feed, in the backplane's database. A change of a device's
/// subscriptions notifies the other nodes (`subscriptions:DEVICE`), so the device's event stream, wherever it is
/// open, follows the feeds it follows now.
extension FluentFeedStore {
    /// The most an answer carries, in bytes of the items' text (an agent reads answers of at most 1 MiB).
    static let answerBudget = 512 * 1024

    public func subscribe(device: String, _ request: SubscriptionRequest, at now: Date) async throws(BackplaneError) -> Subscription {
        let request = try request.validated()
        return try await store.transaction("subscribe") { database async throws in
            guard try await BackplaneFeedModel.find(request.feedID, on: database) != nil else { throw BackplaneError.unknownFeed(request.feedID) }
            try await BackplaneRowLocks.document("subscriptions:" + device, on: database)
            let id = BackplaneSubscriptionModel.id(device: device, feed: request.feedID)
            let model: BackplaneSubscriptionModel
            if let existing = try await BackplaneSubscriptionModel.find(id, on: database) {
                model = existing
            } else {
                let count = try await BackplaneSubscriptionModel.query(on: database).filter(\.$device == device).count()
                guard count < SubscriptionRequest.maximumFeeds else { throw BackplaneError.subscriptionLimit(SubscriptionRequest.maximumFeeds) }
                model = BackplaneSubscriptionModel()
                model.id = id
                model.device = device
                model.feed = request.feedID
                model.applied = 0
                model.created = now
            }
            model.maxItems = request.maxItems
            model.autodelete = request.autodelete
            try await model.save(on: database)
            try await BackplaneRowLocks.notify("subscriptions:" + device, on: database)
            return model.value
        }
    }

    public func unsubscribe(device: String, feed: String) async throws(BackplaneError) {
        try await store.transaction("unsubscribe") { database async throws in
            guard let model = try await BackplaneSubscriptionModel.find(BackplaneSubscriptionModel.id(device: device, feed: feed), on: database) else {
                throw BackplaneError.notSubscribed(feed)
            }
            try await model.delete(on: database)
            try await BackplaneRowLocks.notify("subscriptions:" + device, on: database)
        }
    }

    public func subscriptions(device: String) async throws(BackplaneError) -> [Subscription] {
        try await store.transaction("read the subscriptions") { database async throws in
            try await BackplaneSubscriptionModel.query(on: database).filter(\.$device == device).sort(\.$feed).all().map(\.value)
        }
    }

    public func subscribers(feed: String, page: ListingRequest) async throws(BackplaneError) -> ListingPage<Subscription> {
        try await store.transaction("read the subscribers", atomic: false) { database async throws in
            guard try await BackplaneFeedModel.find(feed, on: database) != nil else { throw BackplaneError.unknownFeed(feed) }
            var query = BackplaneSubscriptionModel.query(on: database).filter(\.$feed == feed)
            if let after = page.afterKey?.first { query = query.filter(\.$device > after) }
            let rows = try await query.sort(\.$device).limit(page.limit + 1).all().map(\.value)
            return ListingPage(reading: rows, limit: page.limit, listing: Subscription.listing) { [$0.deviceID] }
        }
    }

    public func deliver(device: String, applied: [String: Int64]) async throws(BackplaneError) -> [FeedDelivery] {
        try await store.transaction("deliver the items") { database async throws in
            var budget = Self.answerBudget
            var deliveries: [FeedDelivery] = []
            for model in try await BackplaneSubscriptionModel.query(on: database).filter(\.$device == device).sort(\.$feed).all() {
                if let told = applied[model.feed], told > model.applied, let feed = try await BackplaneFeedModel.find(model.feed, on: database) {
                    // Never past the feed's last item: a device that claims more skips nothing to come.
                    model.applied = min(told, feed.nextSequence - 1)
                    try await model.save(on: database)
                }
                var items: [FeedItem] = []
                var more = false
                if budget > 0 {
                    for row in try await BackplaneFeedItemModel.query(on: database).filter(\.$feed == model.feed).filter(\.$sequence > model.applied)
                        .sort(\.$sequence).limit(101).all() {
                        let item = try row.value()
                        guard items.count < 100, item.textSize <= budget else { more = true; break }
                        budget -= item.textSize
                        items.append(item)
                    }
                } else {
                    more = try await BackplaneFeedItemModel.query(on: database).filter(\.$feed == model.feed).filter(\.$sequence > model.applied).count() > 0
                }
                deliveries.append(FeedDelivery(subscription: model.value, items: items, more: more))
            }
            return deliveries
        }
    }

    public func listing(device: String, since: Date, allFeeds: Bool) async throws(BackplaneError) -> [FeedItem] {
        try await store.transaction("list the items") { database async throws in
            var query = BackplaneFeedItemModel.query(on: database).filter(\.$published >= since)
            if !allFeeds {
                let feeds = try await BackplaneSubscriptionModel.query(on: database).filter(\.$device == device).all().map(\.feed)
                query = query.filter(\.$feed ~~ feeds)
            }
            var budget = Self.answerBudget
            var items: [FeedItem] = []
            for row in try await query.sort(\.$published, .descending).sort(\.$sequence, .descending).limit(500).all() {
                let item = try row.value()
                guard item.textSize <= budget else { break }
                budget -= item.textSize
                items.append(item)
            }
            return items
        }
    }
}

extension FeedItem {
    /// About how many bytes the item takes as JSON (its texts; the rest is small and bounded).
    var textSize: Int {
        200 + feedID.utf8.count + assetID.utf8.count + (url?.utf8.count ?? 0) + (title?.utf8.count ?? 0)
            + (metadata ?? [:]).reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count + 8 }
    }
}

/// A device's subscription to a feed.
final class BackplaneSubscriptionModel: Model, @unchecked Sendable {
    static let schema = "backplane_subscriptions"

    @ID(custom: "subscription_id", generatedBy: .user) var id: String?
    @Field(key: "device_id") var device: String
    @Field(key: "feed_id") var feed: String
    @Field(key: "max_items") var maxItems: Int
    @Field(key: "autodelete") var autodelete: Bool
    @Field(key: "applied") var applied: Int64
    @Field(key: "created_at") var created: Date

    init() {}

    static func id(device: String, feed: String) -> String { device + " " + feed }

    var value: Subscription {
        Subscription(feedID: feed, deviceID: device, maxItems: maxItems, autodelete: autodelete, applied: applied, created: created)
    }
}

/// Devices' subscriptions to feeds.
public struct AddSubscriptions: AsyncMigration {
    /// The migration.
    public init() {}

    public func prepare(on database: any Database) async throws {
        try await database.schema(BackplaneSubscriptionModel.schema)
            .field("subscription_id", .string, .identifier(auto: false)).field("device_id", .string, .required).field("feed_id", .string, .required)
            .field("max_items", .int, .required).field("autodelete", .bool, .required).field("applied", .int64, .required)
            .field("created_at", .datetime, .required)
            .unique(on: "device_id", "feed_id")
            .create()
    }

    public func revert(on database: any Database) async throws {
        try await database.schema(BackplaneSubscriptionModel.schema).delete()
    }
}
