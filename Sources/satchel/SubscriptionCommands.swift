import ArgumentParser
import Foundation
import SatchelBackplane
import SatchelBytes

extension AgentCommand {
    /// `satchel agent subscribe FEED`: follow a feed; its new items are downloaded by themselves.
    struct Subscribe: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "subscribe",
            abstract: "Follow a feed of the backplane: its new items are enqueued at each sync (newest first) and downloaded by download run or agent listen.",
            discussion: "Subscribing again changes the quota. Past the quota, the oldest of the feed's items on the device is reset to make room (--autodelete, the default: its files deleted, it stays in the queue, paused) or the new item is made but not downloaded (--no-autodelete: deferred).")
        @Argument(help: "The feed's ID.") var feed: String
        @OptionGroup var agent: AgentOptions
        @Option(name: .customLong("max-items"), help: "The most of the feed's items kept on the device; 0 = no limit.") var maxItems = 0
        @Flag(inversion: .prefixedNo, help: "Past the quota, reset the feed's oldest item on the device (delete its files, keep it paused in the queue) to make room (else defer the new one).")
        var autodelete = true
        @Flag(help: "Print the subscription as JSON.") var json = false

        func execute() async throws {
            let request = try SubscriptionRequest(feedID: feed, maxItems: maxItems, autodelete: autodelete).validated()
            let subscription = try await agent.with { agent in try await agent.backplane.subscribe(request) }
            if json { try RightsReport.print(subscription) } else { print(AgentCommand.Subscriptions.line(subscription)) }
        }
    }

    /// `satchel agent unsubscribe FEED`.
    struct Unsubscribe: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "unsubscribe",
                                                        abstract: "Stop following a feed (the items already on the device stay).")
        @Argument(help: "The feed's ID.") var feed: String
        @OptionGroup var agent: AgentOptions

        func execute() async throws {
            try await agent.with { agent in try await agent.backplane.unsubscribe(feed: try Feed.checked(feed)) }
            print("unsubscribed from \(feed)")
        }
    }

    /// `satchel agent subscriptions`: the feeds followed.
    struct Subscriptions: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "subscriptions", abstract: "The feeds this device follows: feed, quota, last item applied.")
        @OptionGroup var agent: AgentOptions
        @Flag(help: "Print JSON.") var json = false

        func execute() async throws {
            let subscriptions = try await agent.with { agent in try await agent.backplane.subscriptions() }
            if json { try RightsReport.print(subscriptions) } else { print(subscriptions.isEmpty ? "no subscriptions" : subscriptions.map(Self.line).joined(separator: "\n")) }
        }

        static func line(_ subscription: Subscription) -> String {
            let quota = subscription.maxItems == 0 ? "no limit" : "at most \(subscription.maxItems), " + (subscription.autodelete ? "oldest reset" : "new deferred")
            return "\(subscription.feedID)\t\(quota)\tapplied through item \(subscription.applied)"
        }
    }
}
