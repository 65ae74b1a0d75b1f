import ArgumentParser
import Foundation
import SatchelBackplane
import SatchelBytes

/// `satchel backplane`: the operator's side of the backplane against a running server.
struct BackplaneOperatorCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "backplane",
        abstract: "Users, devices, limits and settings of a running server's backplane (remote delete, wipe and kill).",
        discussion: "A device is named by its device ID or ext:EXTERNAL-ID. Every command takes --server URL and --operator-key-file FILE (or $SATCHEL_SERVER and $SATCHEL_OPERATOR_KEY); --json prints JSON.",
        subcommands: [Users.self, Limits.self, Devices.self, Slots.self, Events.self, Feeds.self, Settings.self])

    /// Prints `value` as JSON, or `text` for people.
    static func output(_ value: some Encodable, json: Bool, _ text: () -> String) throws {
        print(json ? String(decoding: try JSONCoding.encoder(.pretty).encode(value), as: UTF8.self) : text())
    }

    /// One line for a device.
    static func line(_ device: BackplaneDevice) -> String {
        [device.deviceID, device.user, device.externalID.map { "ext:\($0)" } ?? "-", device.downloadEnabled ? "enabled" : "disabled",
         device.state.rawValue, "last sync \(device.lastSync.map { ISODate.string($0) } ?? "never")", device.name].joined(separator: "\t")
    }

    /// One line for limits.
    static func line(_ limits: BackplaneLimits) -> String {
        func value(_ number: Int?) -> String { number.map(String.init) ?? "no limit" }
        return "max devices \(value(limits.maxDevices)), max assets per device \(value(limits.maxAssetsPerDevice)), "
            + "max downloads \(value(limits.maxDownloads)), max streams \(value(limits.maxStreams))"
    }

    struct Users: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "users", abstract: "The users and their devices.", subcommands: [List.self, Show.self])

        struct List: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Every user by user ID, a page at a time: devices, enabled devices, limits.")
            @Option(help: "Only users whose ID starts with this.") var prefix: String?
            @OptionGroup var paging: PagingOptions
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                try await paging.walk(try options.client(), path: "users", query: prefix.map { [("prefix", $0)] } ?? [], json: options.json,
                                      empty: "no users") { (user: BackplaneUser) in
                    "\(user.user)\t\(user.devices.count) devices, \(user.enabledDevices) enabled\t\(BackplaneOperatorCommand.line(user.limits))"
                }
            }
        }

        struct Show: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "show", abstract: "One user: their limits and devices.")
            @Argument(help: "The user (the entitlement token's subject).") var user: String
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                let answer = try await options.client().call(.GET, "users/" + OperatorClient.segment(user), as: BackplaneUser.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) {
                    (["\(answer.user): \(BackplaneOperatorCommand.line(answer.limits)); \(answer.enabledDevices) of \(answer.devices.count) devices enabled"]
                     + answer.devices.map(BackplaneOperatorCommand.line)).joined(separator: "\n")
                }
            }
        }
    }

    struct Limits: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "limits", abstract: "The download and stream limits, global or a user's.",
                                                        subcommands: [Show.self, List.self, Set.self])

        struct Show: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "show", abstract: "The global limits, or those that hold for a user (--user) and their own.")
            @Option(help: "The user (default: the global limits).") var user: String?
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                let view = try await Limits.view(user, try options.client())
                try BackplaneOperatorCommand.output(view, json: options.json) {
                    guard let user = view.user else { return "global: \(BackplaneOperatorCommand.line(view.global))" }
                    return "\(user): \(BackplaneOperatorCommand.line(view.effective))" + (view.own == nil ? " (the global limits)" : "")
                }
            }
        }

        struct List: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "The users with limits of their own, by user ID, a page at a time.")
            @Option(help: "Only users whose ID starts with this.") var prefix: String?
            @OptionGroup var paging: PagingOptions
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                try await paging.walk(try options.client(), path: "limits", query: prefix.map { [("prefix", $0)] } ?? [], json: options.json,
                                      empty: "no user has limits of their own") { (row: UserLimits) in
                    "\(row.user)\t\(BackplaneOperatorCommand.line(row.limits))"
                }
            }
        }

        /// The limits of `user` (nil: the global ones), one row read whatever the number of users.
        static func view(_ user: String?, _ client: OperatorClient) async throws -> LimitsView {
            if let user { return try await client.call(.GET, "limits/" + OperatorClient.segment(user), as: LimitsView.self) }
            return LimitsView(global: try await client.call(.GET, "limits?limit=1", as: LimitsPage.self).global, user: nil, own: nil)
        }

        struct Set: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(
                commandName: "set", abstract: "Set the global limits, or a user's own (--user); a user's may be set before they have a device.",
                discussion: "The limits given change; the others stay as they are. A number, or none to remove the limit (a user's own: the global one holds again).")
            @Option(help: "The user (default: the global limits).") var user: String?
            @Option(name: .customLong("max-devices"), help: "Download-enabled devices per user.") var maxDevices: LimitArgument?
            @Option(name: .customLong("max-assets-per-device"), help: "Downloaded assets per device.") var maxAssetsPerDevice: LimitArgument?
            @Option(name: .customLong("max-downloads"), help: "Downloads per account.") var maxDownloads: LimitArgument?
            @Option(name: .customLong("max-streams"), help: "Streams an account plays at once (every device together).") var maxStreams: LimitArgument?
            @OptionGroup var options: OperatorOptions

            func validate() throws {
                guard maxDevices != nil || maxAssetsPerDevice != nil || maxDownloads != nil || maxStreams != nil else {
                    throw ValidationError("give at least one limit (see --help)")
                }
            }

            func execute() async throws {
                let client = try options.client()
                let current = try await Limits.view(user, client)
                var limits = user == nil ? current.global : current.own ?? .none
                if let maxDevices { limits.maxDevices = maxDevices.value }
                if let maxAssetsPerDevice { limits.maxAssetsPerDevice = maxAssetsPerDevice.value }
                if let maxDownloads { limits.maxDownloads = maxDownloads.value }
                if let maxStreams { limits.maxStreams = maxStreams.value }
                let view = try await client.call(.PUT, "limits", body: BackplaneLimitsBody(user: user, limits: limits), as: LimitsView.self)
                try BackplaneOperatorCommand.output(view, json: options.json) { "\(user ?? "global"): \(BackplaneOperatorCommand.line(view.effective))" }
            }
        }
    }

    struct Settings: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "settings", abstract: "The settings every device takes.", subcommands: [Set.self])

        struct Set: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "set", abstract: "Change the settings pushed to every device (the options given; others stay).")
            @Option(name: .customLong("expiry-after-download"), help: "Default seconds an asset stays after its download.") var expiryAfterDownload: UInt32?
            @Option(name: .customLong("expiry-after-play"), help: "Default seconds an asset stays after its first play.") var expiryAfterPlay: UInt32?
            @Option(name: .customLong("max-downloaded-assets"), help: "Downloaded assets a device keeps at most.") var maxDownloadedAssets: Int?
            @Option(name: .customLong("max-storage"), help: "Bytes the downloads may use at most.") var maxStorage: Int64?
            @Option(help: "Bytes that stay free on the device.") var headroom: Int64?
            @Option(name: .customLong("download-over-cellular"), help: "true or false.") var downloadOverCellular: Bool?
            @Option(name: .customLong("stream-lease"), help: "Seconds a stream slot is held unless its device renews it (default 60).") var streamLease: UInt32?
            @Option(name: .customLong("disabled-events"),
                    help: "Event kinds devices do not report, comma-separated (none: report every kind). Download queued, started, completed, error, max errors reset and reset are always reported.")
            var disabledEvents: String?
            @Option(name: .customLong("allow-private-feed-origins"),
                    help: "true or false (the default): whether devices fetch a feed's items from private, loopback or link-local addresses.")
            var allowPrivateFeedOrigins: Bool?
            @OptionGroup var options: OperatorOptions

            func validate() throws {
                _ = try kinds()
            }

            /// `--disabled-events` as kinds.
            func kinds() throws -> [DeviceEventKind]? {
                guard let disabledEvents else { return nil }
                if disabledEvents == "none" { return [] }
                return try disabledEvents.split(separator: ",").map { name in
                    let trimmed = name.trimmingCharacters(in: .whitespaces)
                    guard let kind = DeviceEventKind(rawValue: trimmed) else {
                        throw ValidationError("--disabled-events: \(trimmed.prefix(40)) is not an event kind (\(DeviceEventKind.allCases.map(\.rawValue).joined(separator: ", ")))")
                    }
                    return kind
                }
            }

            func execute() async throws {
                let settings = BackplaneSettings(expiryAfterDownload: expiryAfterDownload, expiryAfterPlay: expiryAfterPlay,
                                                 maxDownloadedAssets: maxDownloadedAssets, maxStorageAllowed: maxStorage, headroom: headroom,
                                                 downloadOverCellular: downloadOverCellular, streamLease: streamLease, disabledEvents: try kinds(),
                                                 allowPrivateFeedOrigins: allowPrivateFeedOrigins)
                guard settings != BackplaneSettings() else { throw CLIError("give at least one setting (see --help)") }
                let answer = try await options.client().call(.PUT, "settings", body: settings, as: BackplaneSettings.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) {
                    String(decoding: (try? JSONCoding.encoder(.pretty).encode(answer)) ?? Data(), as: UTF8.self)
                }
            }
        }
    }
}

/// A limit on the command line: a number, or `none` for no limit.
struct LimitArgument: ExpressibleByArgument, Equatable {
    /// The limit; nil: none.
    let value: Int?

    init?(argument: String) {
        if argument == "none" {
            value = nil
        } else if let number = Int(argument), number >= 0 {
            value = number
        } else {
            return nil
        }
    }

    static var defaultCompletionKind: CompletionKind { .list(["none"]) }
}

extension BackplaneOperatorCommand {
    struct Slots: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "slots", abstract: "The stream slots held now (streams playing).", subcommands: [List.self])

        struct List: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Every slot held, or a user's: device, asset, when the lease ends.")
            @Option(help: "Only this user's slots.") var user: String?
            @OptionGroup var paging: PagingOptions
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                try await paging.walk(try options.client(), path: "slots", query: user.map { [("user", $0)] } ?? [], json: options.json,
                                      empty: "no stream slot is held") { (slot: StreamSlot) in
                    [slot.slotID, slot.user, slot.deviceID, slot.assetID, "since \(ISODate.string(slot.acquired))", "lease ends \(ISODate.string(slot.expires))"]
                        .joined(separator: "\t")
                }
            }
        }
    }
}
