import ArgumentParser
import Foundation
import SatchelBackplane
import SatchelBytes

extension BackplaneOperatorCommand {
    struct Devices: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "devices", abstract: "Devices: list, show, enable or disable downloads, remote delete, wipe and kill, forget.",
            subcommands: [List.self, Show.self, Enable.self, Disable.self, Wipe.self, Kill.self, DeleteAsset.self, Delete.self])

        struct List: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "list", abstract: "Every device, or a user's, by device ID, a page at a time.")
            @Option(help: "Only this user's devices.") var user: String?
            @Option(help: "Only devices whose ID starts with this.") var prefix: String?
            @OptionGroup var paging: PagingOptions
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                let query = [("user", user), ("prefix", prefix)].compactMap { name, value in value.map { (name, $0) } }
                try await paging.walk(try options.client(), path: "devices", query: query, json: options.json, empty: "no devices",
                                      line: { (device: BackplaneDevice) in BackplaneOperatorCommand.line(device) })
            }
        }

        struct Show: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "show", abstract: "One device.")
            @Argument(help: "A device ID or ext:EXTERNAL-ID.") var device: String
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                let answer = try await options.client().call(.GET, "devices/" + OperatorClient.segment(device), as: BackplaneDevice.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) { BackplaneOperatorCommand.line(answer) }
            }
        }

        /// enable or disable: the device as it is now, printed.
        static func toggle(_ verb: String, _ device: String, _ options: OperatorOptions) async throws {
            let answer = try await options.client().call(.POST, "devices/" + OperatorClient.segment(device) + "/" + verb, as: BackplaneDevice.self)
            try BackplaneOperatorCommand.output(answer, json: options.json) { BackplaneOperatorCommand.line(answer) }
        }

        /// wipe or kill: the command issued, printed.
        static func command(_ verb: String, _ device: String, _ options: OperatorOptions) async throws {
            let answer = try await options.client().call(.POST, "devices/" + OperatorClient.segment(device) + "/" + verb, as: BackplaneCommand.self)
            try BackplaneOperatorCommand.output(answer, json: options.json) { "\(verb) issued to \(device) (command \(answer.sequence))" }
        }

        struct Delete: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(
                commandName: "delete", abstract: "Forget the device: its place under its user's limits is freed, its pending commands dropped.",
                discussion: "A device that calls again is enrolled anew, under the limits. A killed device cannot be forgotten: it stays refused.")
            @Argument(help: "A device ID or ext:EXTERNAL-ID.") var device: String
            @OptionGroup var options: OperatorOptions

            func execute() async throws {
                let answer = try await options.client().call(.DELETE, "devices/" + OperatorClient.segment(device), as: BackplaneDevice.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) { "forgot \(answer.deviceID) (\(answer.user))" }
            }
        }

        struct Enable: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "enable", abstract: "Let the device download (only within its user's device limit).")
            @Argument(help: "A device ID or ext:EXTERNAL-ID.") var device: String
            @OptionGroup var options: OperatorOptions
            func execute() async throws { try await Devices.toggle("enable", device, options) }
        }

        struct Disable: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "disable", abstract: "Stop the device downloading.")
            @Argument(help: "A device ID or ext:EXTERNAL-ID.") var device: String
            @OptionGroup var options: OperatorOptions
            func execute() async throws { try await Devices.toggle("disable", device, options) }
        }

        struct Wipe: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "wipe", abstract: "Remote wipe: every download and license on the device is deleted.")
            @Argument(help: "A device ID or ext:EXTERNAL-ID.") var device: String
            @OptionGroup var options: OperatorOptions
            func execute() async throws { try await Devices.command("wipe", device, options) }
        }

        struct Kill: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "kill", abstract: "Remote kill: wipe the device and unregister it; its later calls are refused.")
            @Argument(help: "A device ID or ext:EXTERNAL-ID.") var device: String
            @OptionGroup var options: OperatorOptions
            func execute() async throws { try await Devices.command("kill", device, options) }
        }

        struct DeleteAsset: SatchelAsyncCommand {
            static let configuration = CommandConfiguration(commandName: "delete-asset", abstract: "Remote delete: one asset's download and license on the device.")
            @Argument(help: "A device ID or ext:EXTERNAL-ID.") var device: String
            @Argument(help: "The asset ID.") var asset: String
            @OptionGroup var options: OperatorOptions
            struct Body: Codable { var assetID: String }

            func execute() async throws {
                let answer = try await options.client().call(.POST, "devices/" + OperatorClient.segment(device) + "/delete-asset", body: Body(assetID: asset),
                                                             as: BackplaneCommand.self)
                try BackplaneOperatorCommand.output(answer, json: options.json) { "delete-asset \(asset) issued to \(device) (command \(answer.sequence))" }
            }
        }
    }
}
