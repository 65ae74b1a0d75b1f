import ArgumentParser
import Foundation
import SatchelBackplane
import SatchelBytes

extension BackplaneOperatorCommand {
    struct Feeds: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "feeds", abstract: "Feeds devices subscribe to: their items are downloaded by themselves.",
            subcommands: [Create.self, AddItem.self, List.self, Items.self, Subscribers.self])

        struct Create: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "create", abstract: "Make a feed.")
            @Argument(help: "The feed's ID (letters, digits, -, _ and .).") var feed: String
            @Option(help: "Its title.") var title: String
            @OptionGroup var options: OperatorOptions
            struct Body: Codable { var feedID: String; var title: String }

            func execute() async throws {
                let answer = try await options.client().call(.POST, "feeds", body: Body(feedID: feed, title: title), as: Feed.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) { "made feed \(answer.feedID): \(answer.title)" }
            }
        }

        struct AddItem: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "add-item", abstract: "Add an item to a feed: subscribed devices download it.")
            @Argument(help: "The feed's ID.") var feed: String
            @Option(name: .customLong("asset-id"), help: "The asset ID devices download it as.") var assetID: String
            @Option(help: "Where to download it from (http or https); without it, the devices' app supplies the URL (its subscription data source).") var url: String?
            @Option(help: "Its title.") var title: String?
            @Option(help: "When it was published (ISO 8601; default now).") var published: String?
            @Option(help: "When it stops being offered (ISO 8601).") var expires: String?
            @OptionGroup var options: OperatorOptions
            struct Body: Codable { var assetID: String; var url: String?; var title: String?; var published: Date?; var expires: Date? }

            func execute() async throws {
                func date(_ text: String?, _ name: String) throws -> Date? {
                    guard let text else { return nil }
                    guard let date = ISODate.date(text) else { throw CLIError("\(name) is an ISO 8601 date such as 2026-11-27 or 2026-11-27T10:00:00Z") }
                    return date
                }
                let body = Body(assetID: assetID, url: url, title: title, published: try date(published, "--published"), expires: try date(expires, "--expires"))
                let answer = try await options.client().call(.POST, "feeds/" + OperatorClient.segment(feed) + "/items", body: body, as: FeedItem.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) { "added item \(answer.sequence) to \(answer.feedID): \(answer.assetID)" }
            }
        }

        struct List: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Every feed by ID, a page at a time: ID, items, title.")
            @OptionGroup var paging: PagingOptions
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                try await paging.walk(try options.client(), path: "feeds", json: options.json, empty: "no feeds") { (feed: Feed) in
                    "\(feed.feedID)\t\(feed.items) items\t\(feed.title)"
                }
            }
        }

        struct Items: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "items", abstract: "A feed's items, in the order added: number, asset, published, title.")
            @Argument(help: "The feed's ID.") var feed: String
            @OptionGroup var paging: PagingOptions
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                try await paging.walk(try options.client(), path: "feeds/" + OperatorClient.segment(feed) + "/items", json: options.json,
                                      empty: "no items") { (item: FeedItem) in
                    [String(item.sequence), item.assetID, ISODate.string(item.published), item.expires.map { "expires " + ISODate.string($0) } ?? "", item.title ?? ""]
                        .joined(separator: "\t")
                }
            }
        }

        struct Subscribers: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "subscribers", abstract: "The devices following a feed: device, quota, last item applied.")
            @Argument(help: "The feed's ID.") var feed: String
            @OptionGroup var paging: PagingOptions
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                try await paging.walk(try options.client(), path: "feeds/" + OperatorClient.segment(feed) + "/subscribers", json: options.json,
                                      empty: "no subscribers") { (subscription: Subscription) in
                    "\(subscription.deviceID)\t\(subscription.maxItems == 0 ? "no limit" : "at most \(subscription.maxItems)")\tapplied through item \(subscription.applied)"
                }
            }
        }
    }
}
