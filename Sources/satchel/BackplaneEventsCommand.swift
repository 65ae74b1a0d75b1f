import ArgumentParser
import Foundation
import SatchelBackplane
import SatchelBytes

extension BackplaneOperatorCommand {
    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "events", abstract: "What devices reported: downloads, plays, licenses, commands applied.", subcommands: [List.self, Counts.self])

        /// The selection both subcommands take.
        struct Filters: ParsableArguments {
            @Option(help: "Only this device's (device ID).") var device: String?
            @Option(help: "Only this user's.") var user: String?
            @Option(help: "Only this kind (\(DeviceEventKind.allCases.map(\.rawValue).joined(separator: ", "))).") var kind: String?
            @Option(help: "Only this asset's.") var asset: String?
            @Option(help: "From this time on (ISO 8601).") var since: String?
            @Option(help: "Before this time (ISO 8601).") var until: String?

            func validate() throws {
                if let kind, DeviceEventKind(rawValue: kind) == nil {
                    throw ValidationError("--kind is one of \(DeviceEventKind.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                for (name, value) in [("--since", since), ("--until", until)] where value != nil && ISODate.date(value ?? "") == nil {
                    throw ValidationError("\(name) is an ISO 8601 date such as 2026-11-27 or 2026-11-27T10:00:00Z")
                }
            }

            /// The filters given, as query names and values.
            var pairs: [(String, String)] {
                [("device", device), ("user", user), ("kind", kind), ("asset", asset), ("since", since.flatMap(ISODate.date).map(ISODate.string)),
                 ("until", until.flatMap(ISODate.date).map(ISODate.string))].compactMap { name, value in value.map { (name, $0) } }
            }

            /// The query string, each value percent-encoded.
            func query(_ more: [(String, String)] = []) -> String {
                let all = pairs + more
                return all.isEmpty ? "" : "?" + all.map { "\($0.0)=\(OperatorClient.segment($0.1))" }.joined(separator: "&")
            }
        }

        struct List: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Events, the last received first, a page at a time: time, kind, user, device, asset, reason.")
            @OptionGroup var filters: Filters
            @OptionGroup var paging: PagingOptions
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                try await paging.walk(try options.client(), path: "events", query: filters.pairs, json: options.json, empty: "no events") { (recorded: RecordedEvent) in
                    let event = recorded.event
                    return [ISODate.string(event.time), event.kind.rawValue, recorded.user, recorded.deviceID, event.assetID ?? "-",
                            event.reason ?? "", event.seconds.map { String(format: "%.0f s", $0) } ?? ""].joined(separator: "\t")
                }
            }
        }

        struct Counts: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "counts", abstract: "How many events, by kind, user, asset, device or reason, most first.")
            @Option(help: "kind, user, asset, device or reason.") var by = "kind"
            @OptionGroup var filters: Filters
            @OptionGroup var options: OperatorOptions
            struct Answer: Codable { var counts: [EventCount] }

            func validate() throws {
                guard EventGrouping(rawValue: by) != nil else { throw ValidationError("--by is kind, user, asset, device or reason") }
            }

            func execute() async throws {
                let answer = try await options.client().call(.GET, "events/counts" + filters.query([("by", by)]), as: Answer.self)
                try BackplaneOperatorCommand.output(answer.counts, json: options.json) {
                    answer.counts.isEmpty ? "no events" : answer.counts.map { "\($0.count)\t\($0.key.isEmpty ? "-" : $0.key)" }.joined(separator: "\n")
                }
            }
        }
    }
}
