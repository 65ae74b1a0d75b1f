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
        subcommands: [Users.self, Limits.self, Devices.self, Settings.self])

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
        return "max devices \(value(limits.maxDevices)), max assets per device \(value(limits.maxAssetsPerDevice)), max downloads \(value(limits.maxDownloads))"
    }

    struct Users: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "users", abstract: "The users and their devices.", subcommands: [List.self, Show.self])

        struct List: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Every user: devices, enabled devices, limits.")
            @OptionGroup var options: OperatorOptions
            struct Answer: Codable { var users: [BackplaneUser] }

            func execute() async throws {
                let answer = try await options.client().call(.GET, "users", as: Answer.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) {
                    answer.users.map { "\($0.user)\t\($0.devices.count) devices, \($0.enabledDevices) enabled\t\(BackplaneOperatorCommand.line($0.limits))" }
                        .joined(separator: "\n")
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
        static let configuration = CommandConfiguration(commandName: "limits", abstract: "The download limits, global or a user's.", subcommands: [Set.self])

        struct Set: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "set", abstract: "Set the global limits, or a user's own (--user); a user's may be set before they have a device.")
            @Option(help: "The user (default: the global limits).") var user: String?
            @Option(name: .customLong("max-devices"), help: "Download-enabled devices per user.") var maxDevices: Int
            @Option(name: .customLong("max-assets-per-device"), help: "Downloaded assets per device.") var maxAssetsPerDevice: Int?
            @Option(name: .customLong("max-downloads"), help: "Downloads per account.") var maxDownloads: Int?
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                let limits = BackplaneLimits(maxDevices: maxDevices, maxAssetsPerDevice: maxAssetsPerDevice, maxDownloads: maxDownloads)
                let table = try await options.client().call(.PUT, "limits", body: BackplaneLimitsBody(user: user, limits: limits), as: LimitTable.self)
                try BackplaneOperatorCommand.output(table, json: options.json) {
                    "\(user ?? "global"): \(BackplaneOperatorCommand.line(user.map { table.limits(for: $0) } ?? table.global))"
                }
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
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                let settings = BackplaneSettings(expiryAfterDownload: expiryAfterDownload, expiryAfterPlay: expiryAfterPlay,
                                                 maxDownloadedAssets: maxDownloadedAssets, maxStorageAllowed: maxStorage, headroom: headroom,
                                                 downloadOverCellular: downloadOverCellular)
                guard settings != BackplaneSettings() else { throw CLIError("give at least one setting (see --help)") }
                let answer = try await options.client().call(.PUT, "settings", body: settings, as: BackplaneSettings.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) {
                    String(decoding: (try? JSONCoding.encoder(.pretty).encode(answer)) ?? Data(), as: UTF8.self)
                }
            }
        }
    }
}
