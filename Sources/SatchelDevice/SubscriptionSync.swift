import Foundation
import Logging
import SatchelAgent
import SatchelBackplane
import SatchelDownloads

/// An app's own source of what to download for a feed's item (the custom data source,
/// `lookupMetadataForAssetID`): the backplane may know an item by its asset ID alone, and the app supplies its URL,
/// title, metadata and download options (a license's token, headers, a bit rate).
public protocol SubscriptionDataSource: Sendable {
    /// What to download for `item` (the feed's own, its URL perhaps absent); nil skips the item.
    func lookup(_ item: FeedItem) async throws -> SubscriptionDownload?
}

/// A feed's item as it is downloaded: the item (URL, title, metadata) and the download's options.
public struct SubscriptionDownload: Sendable, Equatable {
    /// The item.
    public var item: FeedItem
    /// The options it is downloaded with (its feed membership is set by the subscription).
    public var options: DownloadOptions

    /// A download of `item` with `options`.
    public init(item: FeedItem, options: DownloadOptions = DownloadOptions()) {
        self.item = item
        self.options = options
    }
}

/// The default data source: the feed's item as the backplane
/// has it, with default options.
public struct FeedDataSource: SubscriptionDataSource {
    /// The default source.
    public init() {}

    public func lookup(_ item: FeedItem) async throws -> SubscriptionDownload? { SubscriptionDownload(item: item) }
}

/// What a subscriptions' sync did (the subscription notices: added, reset, deferred, and the sync's result).
public struct SubscriptionReport: Sendable, Equatable, Encodable {
    /// Items enqueued (download IDs).
    public var added: [String] = []
    /// Items reset to make room for newer ones (download IDs): their files deleted, back in the queue, paused.
    public var reset: [String] = []
    /// Items made but not downloaded: their feed's quota is full (download IDs).
    public var deferred: [String] = []
    /// Items not taken, with the reason (asset ID: reason).
    public var skipped: [String: String] = [:]
    /// A forced sync's list: the items published since its date.
    public var listing: [FeedItem]?

    /// An empty report.
    public init() {}

    /// Whether the sync changed anything on the device or skipped an item.
    public var isEmpty: Bool { added.isEmpty && reset.isEmpty && deferred.isEmpty && skipped.isEmpty }

    /// The report in a line: `2 added, 1 deleted to make room, 0 deferred`.
    public var summary: String {
        "\(added.count) added, \(reset.count) reset to make room, \(deferred.count) deferred" + (skipped.isEmpty ? "" : ", \(skipped.count) skipped")
    }
}

/// The device side of feed subscriptions: the items new to the device, feed by feed,
/// planned by `SubscriptionRules` (the quota, autodelete, deferral) and applied through the download engine —
/// older items deleted to make room, new ones enqueued newest first, deferred ones made paused — then told to the
/// backplane as applied. An item the origin could not answer for now is not told applied and comes again.
public struct SubscriptionSync: Sendable {
    let agent: Agent
    let downloads: DownloadManager
    let dataSource: any SubscriptionDataSource
    let logger: Logger

    /// The most round trips of one sync (each applies up to an answer's items).
    static let rounds = 50

    /// A sync of `agent`'s subscriptions into `downloads`, items looked up through `dataSource`.
    public init(agent: Agent, downloads: DownloadManager, dataSource: any SubscriptionDataSource = FeedDataSource(),
                logger: Logger = Logger(label: "satchel.subscriptions")) {
        self.agent = agent
        self.downloads = downloads
        self.dataSource = dataSource
        self.logger = logger
    }

    /// One sync; with `since`, the items published since then are listed too (of every feed with `allFeeds`), not
    /// downloaded (the forced sync).
    public func run(since: Date? = nil, allFeeds: Bool = false) async throws -> SubscriptionReport {
        var report = SubscriptionReport()
        var request = SubscriptionSyncRequest(since: since, allFeeds: allFeeds)
        var waiting = Set<String>()  // feeds with an item that failed for now: left for the next sync
        for round in 0..<Self.rounds {
            let answer = try await agent.backplane.syncFeeds(request)
            if round == 0 { report.listing = answer.listing }
            var applied: [String: Int64] = [:]
            for delivery in answer.feeds where !delivery.items.isEmpty && !waiting.contains(delivery.subscription.feedID) {
                let (last, failed) = try await apply(delivery, at: answer.serverTime, &report)
                if last > delivery.subscription.applied { applied[delivery.subscription.feedID] = last }
                if failed { waiting.insert(delivery.subscription.feedID) }
            }
            // Nothing applied: nothing to tell (an item that failed for now comes again at the next sync).
            guard !applied.isEmpty else { break }
            request = SubscriptionSyncRequest(applied: applied)
        }
        if !report.isEmpty {
            _ = try? await agent.activity.record(.subscriptionSynced, detail: report.summary)
            logger.info("subscriptions: \(report.summary)")
        }
        return report
    }

    /// Applies one feed's items; answers the number of the last item applied (the items after a failure that may
    /// pass are left for the next sync) and whether there was such a failure.
    private func apply(_ delivery: FeedDelivery, at now: Date, _ report: inout SubscriptionReport) async throws -> (last: Int64, failed: Bool) {
        let subscription = delivery.subscription
        let feed = subscription.feedID
        let assets = try await downloads.assets()
        let present = Set(assets.flatMap { [$0.id, $0.options.feed?.assetID].compactMap { $0 } })
        let held = assets.compactMap { asset -> HeldItem? in
            guard let membership = asset.options.feed, membership.feedID == feed, !asset.isPaused else { return nil }
            return HeldItem(assetID: membership.assetID, published: membership.published)
        }
        var lookedUp: [String: SubscriptionDownload] = [:]
        var candidates: [FeedItem] = []
        var retryFrom: Int64?  // the first item to be delivered again
        for item in delivery.items where !present.contains(item.assetID) {
            do {
                guard let download = try await dataSource.lookup(item) else {
                    report.skipped[item.assetID] = "the app's data source skipped it"
                    continue
                }
                guard let url = download.item.url, FeedItem.isDownloadURL(url) else {
                    report.skipped[item.assetID] = "no http or https URL for it"
                    continue
                }
                var found = download
                found.item.sequence = item.sequence
                found.item.assetID = item.assetID
                lookedUp[item.assetID] = found
                candidates.append(found.item)
            } catch {
                logger.warning("subscriptions: the data source failed for \(item.assetID) (tried again at the next sync): \(error)")
                retryFrom = min(retryFrom ?? item.sequence, item.sequence)
            }
        }
        let plan = SubscriptionRules.plan(newItems: candidates, held: held, maxItems: subscription.maxItems,
                                          autodelete: subscription.autodelete, at: now)
        for asset in plan.delete {
            for stored in assets where stored.options.feed?.feedID == feed && stored.options.feed?.assetID == asset {
                // Seed 003 autodelete: the old item is reset (files deleted, back to its state before download), not dropped.
                try await downloads.reset(stored.id)
                report.reset.append(stored.id)
                _ = try? await agent.activity.record(.subscriptionReset, asset: stored.id, reason: feed)
            }
        }
        for (item, paused) in plan.enqueue.map({ ($0, false) }) + plan.deferred.map({ ($0, true) }) {
            guard let download = lookedUp[item.assetID] else { continue }
            do {
                let id = try await enqueue(download, feed: feed, paused: paused)
                if paused { report.deferred.append(id) } else { report.added.append(id) }
                _ = try? await agent.activity.record(paused ? .subscriptionDeferred : .subscriptionAdded, asset: id, reason: feed)
            } catch let error where Self.passes(error) {
                logger.warning("subscriptions: \(item.assetID) of \(feed) could not be enqueued now (tried again at the next sync): \(error)")
                retryFrom = min(retryFrom ?? item.sequence, item.sequence)
            } catch {
                report.skipped[item.assetID] = "\(error)"
            }
        }
        let last = delivery.items.map(\.sequence).max() ?? subscription.applied
        return (retryFrom.map { min(last, $0 - 1) } ?? last, retryFrom != nil)
    }

    /// Enqueues (or makes paused) one item: its asset ID as the download's ID when it is a valid one.
    private func enqueue(_ download: SubscriptionDownload, feed: String, paused: Bool) async throws -> String {
        let item = download.item
        var options = download.options
        options.feed = FeedMembership(feedID: feed, assetID: item.assetID, published: item.published, title: item.title, metadata: item.metadata)
        // The feed names the URL, not the device: public addresses only, unless the operator's settings allow more.
        if try await agent.backplane.status().settings.allowPrivateFeedOrigins != true { options.origins = .publicOnly }
        let id = AssetStore.isValidID(item.assetID) ? item.assetID : nil
        return try await downloads.add(url: item.url ?? "", id: id, options: options, window: AvailabilityWindow(expiryDate: item.expires),
                                       paused: paused).id
    }

    /// Whether a failure to enqueue may pass (the origin unreachable or failing): the item comes again.
    static func passes(_ error: any Error) -> Bool {
        guard case let .fetch(failure)? = error as? DownloadError else { return false }
        switch failure {
        case .network, .networkUnavailable: return true
        case let .httpStatus(_, status): return status >= 500 || status == 429 || status == 408
        default: return false
        }
    }
}
