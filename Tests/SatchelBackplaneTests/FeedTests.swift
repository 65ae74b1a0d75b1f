import SatchelBytes
import Foundation
import Testing
@testable import SatchelBackplane

/// Feeds and the subscription quota (seed 003 "Subscriptions": `maximumSubscriptionItemsPerFeed`,
/// `autodeleteOldItems`, the deferred notice) with values; the store on real databases.
@Suite("Feeds and subscription rules")
struct FeedRulesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func item(_ asset: String, day: Int, expires: Int? = nil, sequence: Int64 = 0) -> FeedItem {
        FeedItem(feedID: "news", sequence: sequence, assetID: asset, url: "https://cdn.example/\(asset).m3u8",
                 published: now.addingTimeInterval(Double(day) * 86_400), expires: expires.map { now.addingTimeInterval(Double($0) * 86_400) })
    }

    static func held(_ asset: String, day: Int) -> HeldItem { HeldItem(assetID: asset, published: now.addingTimeInterval(Double(day) * 86_400)) }

    @Test("no limit: every new item, newest first; items held already, repeated or expired are left out")
    func unlimited() {
        let plan = SubscriptionRules.plan(newItems: [Self.item("a", day: -3), Self.item("c", day: -1), Self.item("b", day: -2), Self.item("c", day: -1),
                                                     Self.item("old", day: -9, expires: -1), Self.item("kept", day: -5)],
                                          held: [Self.held("kept", day: -5)], maxItems: 0, autodelete: false, at: Self.now)
        #expect(plan.enqueue.map(\.assetID) == ["c", "b", "a"] && plan.delete.isEmpty && plan.deferred.isEmpty)
    }

    @Test("a quota of 2 without autodelete: the newest new items fill it, the rest are deferred; held items count (a hand-enqueued one only when it belongs to the feed: the caller counts it)")
    func quota() {
        let new = [Self.item("a", day: -3), Self.item("b", day: -2), Self.item("c", day: -1)]
        #expect(SubscriptionRules.plan(newItems: new, held: [], maxItems: 2, autodelete: false, at: Self.now)
                == SubscriptionPlan(enqueue: [new[2], new[1]], deferred: [new[0]]))
        #expect(SubscriptionRules.plan(newItems: new, held: [Self.held("x", day: -10)], maxItems: 2, autodelete: false, at: Self.now)
                == SubscriptionPlan(enqueue: [new[2]], deferred: [new[1], new[0]]))
        #expect(SubscriptionRules.plan(newItems: new, held: [Self.held("x", day: -10), Self.held("y", day: -9)], maxItems: 2, autodelete: false,
                                       at: Self.now).deferred.count == 3)
    }

    @Test("a quota of 2 with autodelete: the oldest held items older than a new one are deleted to make room, oldest first; a new item older than everything held is deferred")
    func autodelete() {
        let new = [Self.item("b", day: -2), Self.item("c", day: -1)]
        let plan = SubscriptionRules.plan(newItems: new, held: [Self.held("x", day: -10), Self.held("y", day: -9)], maxItems: 2, autodelete: true, at: Self.now)
        #expect(plan == SubscriptionPlan(enqueue: [new[1], new[0]], delete: ["x", "y"]))
        let older = SubscriptionRules.plan(newItems: [Self.item("ancient", day: -20)], held: [Self.held("x", day: -10), Self.held("y", day: -9)], maxItems: 2,
                                           autodelete: true, at: Self.now)
        #expect(older == SubscriptionPlan(deferred: [Self.item("ancient", day: -20)]))
        let partly = SubscriptionRules.plan(newItems: [Self.item("c", day: -1), Self.item("mid", day: -8)],
                                            held: [Self.held("x", day: -10)], maxItems: 1, autodelete: true, at: Self.now)
        #expect(partly.enqueue.map(\.assetID) == ["c"] && partly.delete == ["x"] && partly.deferred.map(\.assetID) == ["mid"], "the room made is the newest's")
    }

    @Test("an item is refused for an empty or over-long asset ID, a URL that is not http(s), an expiry before publication, or too much metadata; a feed ID keeps to its characters")
    func validation() throws {
        #expect(try Self.item("a", day: 0).validated().assetID == "a")
        for bad in [FeedItem(feedID: "news", assetID: "", url: "https://a/b", published: Self.now),
                    FeedItem(feedID: "news", assetID: "a", url: "file:///etc/passwd", published: Self.now),
                    FeedItem(feedID: "news", assetID: "a", url: "not a url", published: Self.now),
                    Self.item("a", day: 0, expires: -1),
                    FeedItem(feedID: "news", assetID: "a", url: "https://a/b", published: Self.now,
                             metadata: Dictionary(uniqueKeysWithValues: (0..<33).map { ("k\($0)", "v") }))] {
            #expect(throws: BackplaneError.self) { try bad.validated() }
        }
        #expect(try Feed.checked("news-2026.daily_1") == "news-2026.daily_1")
        for bad in ["", "a/b", "../x", "new s", String(repeating: "x", count: 101)] { #expect(throws: BackplaneError.self) { try Feed.checked(bad) } }
    }
}

extension BackplaneStoreTests {
    @Test("feeds: made once (a second of the same ID is 409), items numbered in the order added, read after a cursor, an asset once per feed, an unknown feed 404", arguments: BackplaneStoreTests.kinds)
    func feeds(kind: String) async throws {
        try await BackplaneStoreTests.using(kind) { (stores, _) async throws in
            let feeds = FluentFeedStore(database: stores[0].databaseHandle)
            let made = try await feeds.create("news", title: "Evening news", at: Self.now)
            #expect(made.feedID == "news" && made.items == 0)
            await #expect(throws: BackplaneError.feedExists("news")) { try await feeds.create("news", title: "Again", at: Self.now) }
            var items: [FeedItem] = []
            for (index, asset) in ["monday", "tuesday", "wednesday"].enumerated() {
                var item = FeedRulesTests.item(asset, day: index)
                item.metadata = ["show": "news", "episode": String(index + 1)]
                items.append(try await feeds.add(item))
            }
            #expect(items.map(\.sequence) == [1, 2, 3])
            await #expect(throws: BackplaneError.feedItemExists("tuesday")) { try await feeds.add(FeedRulesTests.item("tuesday", day: 5)) }
            #expect(try await feeds.items(feed: "news", page: ListingRequest(limit: 10, after: ListingCursor(listing: FeedItem.listing, key: ["1"]))).items == Array(items.dropFirst()))
            #expect(try await feeds.items(feed: "news", page: ListingRequest(limit: 10)).items.first?.metadata == ["show": "news", "episode": "1"])
            #expect(try await feeds.feeds(ListingRequest(limit: 10)).items.map(\.items) == [3])
            await #expect(throws: BackplaneError.unknownFeed("sports")) { try await feeds.items(feed: "sports", page: ListingRequest(limit: 10)) }
            var stray = FeedRulesTests.item("x", day: 0)
            stray.feedID = "sports"
            await #expect(throws: BackplaneError.unknownFeed("sports")) { try await feeds.add(stray) }
        }
    }
}

extension BackplaneStoreTests {
    @Test("subscriptions: a device subscribes once (again: its quota changes, its place kept), to a known feed, to at most 100; items delivered after the last applied, which is kept, never lowered and never past the feed's end; an unsubscribed feed delivers nothing; a forgotten device's subscriptions go", arguments: BackplaneStoreTests.kinds)
    func subscriptions(kind: String) async throws {
        try await BackplaneStoreTests.using(kind) { (stores, _) async throws in
            let feeds = FluentFeedStore(database: stores[0].databaseHandle)
            _ = try await stores[0].register(Self.device("d1"))
            _ = try await feeds.create("news", title: "News", at: Self.now)
            _ = try await feeds.create("sports", title: "Sports", at: Self.now)
            await #expect(throws: BackplaneError.unknownFeed("films")) { try await feeds.subscribe(device: "d1", SubscriptionRequest(feedID: "films"), at: Self.now) }
            await #expect(throws: BackplaneError.self) { try await feeds.subscribe(device: "d1", SubscriptionRequest(feedID: "news", maxItems: -1), at: Self.now) }
            let first = try await feeds.subscribe(device: "d1", SubscriptionRequest(feedID: "news", maxItems: 2, autodelete: false), at: Self.now)
            #expect(first.applied == 0 && first.maxItems == 2 && !first.autodelete)
            for (index, asset) in ["monday", "tuesday", "wednesday"].enumerated() { _ = try await feeds.add(FeedRulesTests.item(asset, day: index)) }

            var delivered = try await feeds.deliver(device: "d1", applied: [:])
            #expect(delivered.count == 1 && delivered[0].items.map(\.assetID) == ["monday", "tuesday", "wednesday"] && !delivered[0].more)
            delivered = try await feeds.deliver(device: "d1", applied: ["news": 2])
            #expect(delivered[0].items.map(\.assetID) == ["wednesday"] && delivered[0].subscription.applied == 2)
            // Never lowered; a claim past the end is held to the last item, so the next item still comes.
            #expect(try await feeds.deliver(device: "d1", applied: ["news": 1])[0].subscription.applied == 2)
            #expect(try await feeds.deliver(device: "d1", applied: ["news": 99])[0].subscription.applied == 3)
            _ = try await feeds.add(FeedRulesTests.item("thursday", day: 3))
            #expect(try await feeds.deliver(device: "d1", applied: [:])[0].items.map(\.assetID) == ["thursday"])

            // Subscribing again changes the quota and keeps the place.
            let again = try await feeds.subscribe(device: "d1", SubscriptionRequest(feedID: "news", maxItems: 5, autodelete: true), at: Self.now)
            #expect(again.applied == 3 && again.maxItems == 5 && again.autodelete && again.created == first.created)
            #expect(try await feeds.subscriptions(device: "d1").map(\.feedID) == ["news"])
            #expect(try await feeds.subscribers(feed: "news", page: ListingRequest(limit: 10)).items.map(\.deviceID) == ["d1"])

            // A listing: the items published since a date, of the feeds followed or of every feed; nothing applied.
            var sport = FeedRulesTests.item("final", day: 4)
            sport.feedID = "sports"
            _ = try await feeds.add(sport)
            let since = Self.now.addingTimeInterval(2 * 86_400)
            #expect(try await feeds.listing(device: "d1", since: since, allFeeds: false).map(\.assetID) == ["thursday", "wednesday"])
            #expect(try await feeds.listing(device: "d1", since: since, allFeeds: true).map(\.assetID) == ["final", "thursday", "wednesday"])
            #expect(try await feeds.deliver(device: "d1", applied: [:]).map(\.subscription.feedID) == ["news"], "sports is listed, not delivered")

            await #expect(throws: BackplaneError.notSubscribed("sports")) { try await feeds.unsubscribe(device: "d1", feed: "sports") }
            try await feeds.unsubscribe(device: "d1", feed: "news")
            #expect(try await feeds.deliver(device: "d1", applied: ["news": 4]).isEmpty)
            #expect(try await feeds.subscriptions(device: "d1").isEmpty)

            // At most 100 feeds; a forgotten device's subscriptions go with it.
            for index in 0..<SubscriptionRequest.maximumFeeds {
                _ = try await feeds.create("f\(index)", title: "F", at: Self.now)
                _ = try await feeds.subscribe(device: "d1", SubscriptionRequest(feedID: "f\(index)"), at: Self.now)
            }
            await #expect(throws: BackplaneError.subscriptionLimit(SubscriptionRequest.maximumFeeds)) {
                try await feeds.subscribe(device: "d1", SubscriptionRequest(feedID: "news"), at: Self.now)
            }
            _ = try await stores[0].delete(.device("d1"))
            #expect(try await feeds.subscriptions(device: "d1").isEmpty)
        }
    }

    @Test("a delivery holds at most 100 items of a feed and about 512 KB in all: the rest is marked more, and comes once the first are applied", arguments: BackplaneStoreTests.kinds)
    func deliveryBudget(kind: String) async throws {
        try await BackplaneStoreTests.using(kind) { (stores, _) async throws in
            let feeds = FluentFeedStore(database: stores[0].databaseHandle)
            _ = try await stores[0].register(Self.device("d1"))
            _ = try await feeds.create("news", title: "News", at: Self.now)
            _ = try await feeds.subscribe(device: "d1", SubscriptionRequest(feedID: "news"), at: Self.now)
            let metadata = Dictionary(uniqueKeysWithValues: (0..<8).map { ("k\($0)", String(repeating: "v", count: 1000)) })
            for index in 0..<150 {
                var item = FeedRulesTests.item("e\(index)", day: 0)
                item.metadata = metadata
                _ = try await feeds.add(item)
            }
            var applied: Int64 = 0
            var rounds: [Int] = []
            while true {
                let delivery = try #require(try await feeds.deliver(device: "d1", applied: ["news": applied]).first)
                #expect(delivery.items.map(\.sequence) == Array(applied + 1 ... applied + Int64(delivery.items.count)), "in order, none skipped")
                rounds.append(delivery.items.count)
                guard delivery.more else { break }
                applied = try #require(delivery.items.last?.sequence)
            }
            #expect(rounds.reduce(0, +) == 150 && rounds.count >= 3, "\(rounds)")
            #expect(rounds.allSatisfy { $0 <= 100 })
        }
    }
}

/// The wake hub's feeds: an item added wakes the streams of the devices that follow its feed, and only those.
@Suite("Wake hub: feeds followed")
struct FeedWakeTests {
    /// The wakes `stream` holds now (it is finished first, so reading ends).
    static func drained(_ stream: AsyncStream<BackplaneWakeHub.Wake>, cancel: @Sendable () -> Void) async -> [BackplaneWakeHub.Wake] {
        cancel()
        var wakes: [BackplaneWakeHub.Wake] = []
        for await wake in stream { wakes.append(wake) }
        return wakes
    }

    @Test("a feed's wake reaches the streams of the devices following it (by the store's notice too), not others; a subscriptions' notice wakes the device's streams to read them again; a device with no stream follows nothing")
    func followers() async {
        let hub = BackplaneWakeHub()
        let (one, cancelOne) = hub.subscribe(device: "d1")
        let (two, cancelTwo) = hub.subscribe(device: "d2")
        hub.follow(device: "d1", feeds: ["news"])
        hub.follow(device: "d2", feeds: ["sports"])
        hub.follow(device: "d3", feeds: ["news"])  // no stream here: not kept
        hub.wake(feed: "news")
        hub.wake(payload: "feed:sports")
        hub.wake(payload: "subscriptions:d1")
        hub.wake(feed: "films")
        #expect(await Self.drained(one, cancel: cancelOne) == [.feed("news"), .subscriptions])
        #expect(await Self.drained(two, cancel: cancelTwo) == [.feed("sports")])
        // Streams gone: their devices follow nothing here.
        let (three, cancelThree) = hub.subscribe(device: "d1")
        hub.wake(feed: "news")
        #expect(await Self.drained(three, cancel: cancelThree).isEmpty, "d1's new stream has not said what it follows")
    }
}
