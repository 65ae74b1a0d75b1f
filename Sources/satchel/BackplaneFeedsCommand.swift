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
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Every feed: ID, items, title.")
            @OptionGroup var options: OperatorOptions
            struct Answer: Codable { var feeds: [Feed] }

            func execute() async throws {
                let answer = try await options.client().call(.GET, "feeds", as: Answer.self)
                try BackplaneOperatorCommand.output(answer.feeds, json: options.json) {
                    answer.feeds.isEmpty ? "no feeds" : answer.feeds.map { "\($0.feedID)\t\($0.items) items\t\($0.title)" }.joined(separator: "\n")
                }
            }
        }

        struct Items: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "items", abstract: "A feed's items, in the order added: number, asset, published, title.")
            @Argument(help: "The feed's ID.") var feed: String
            @OptionGroup var options: OperatorOptions
            struct Answer: Codable { var items: [FeedItem] }

            func execute() async throws {
                let answer = try await options.client().call(.GET, "feeds/" + OperatorClient.segment(feed) + "/items", as: Answer.self)
                try BackplaneOperatorCommand.output(answer.items, json: options.json) {
                    answer.items.isEmpty ? "no items" : answer.items.map {
                        [String($0.sequence), $0.assetID, ISODate.string($0.published), $0.expires.map { "expires " + ISODate.string($0) } ?? "", $0.title ?? ""]
                            .joined(separator: "\t")
                    }.joined(separator: "\n")
                }
            }
        }

        struct Subscribers: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "subscribers", abstract: "The devices following a feed: device, quota, last item applied.")
            @Argument(help: "The feed's ID.") var feed: String
            @OptionGroup var options: OperatorOptions
            struct Answer: Codable { var subscriptions: [Subscription] }

            func execute() async throws {
                let answer = try await options.client().call(.GET, "feeds/" + OperatorClient.segment(feed) + "/subscribers", as: Answer.self)
                try BackplaneOperatorCommand.output(answer.subscriptions, json: options.json) {
                    answer.subscriptions.isEmpty ? "no subscribers" : answer.subscriptions.map {
                        "\($0.deviceID)\t\($0.maxItems == 0 ? "no limit" : "at most \($0.maxItems)")\tapplied through item \($0.applied)"
                    }.joined(separator: "\n")
                }
            }
        }
    }
}
