import ArgumentParser

/// `satchel`: the root command.
struct SatchelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "satchel",
        abstract: "Satchel: package, protect, license, download and play protected video.",
        version: BuildInfo.version,
        subcommands: [DemoCommand.self, ServeCommand.self, PackageCommand.self, KeysCommand.self, TokenCommand.self, FPSCommand.self, DownloadCommand.self, BackplaneOperatorCommand.self, PlayCommand.self,
                      AgentCommand.self, LicenseCommand.self, RightsCommand.self, LicensesCommand.self, ProtectCommand.self, OpenCommand.self])
}

/// `satchel fps`: FairPlay Streaming key server tools.
struct FPSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fps",
        abstract: "FairPlay Streaming: build CKCs, inspect SPC/CKC pairs, simulate a device.",
        subcommands: [FPSCKCCommand.self, FPSInspectCommand.self, FPSSimulateCommand.self, FPSRoundTripCommand.self])
}

/// A command with asynchronous work. `execute()` is what main calls: naming it apart from
/// `run()` keeps overload resolution from picking ArgumentParser's synchronous default.
protocol SatchelAsyncCommand: AsyncParsableCommand {
    func execute() async throws
}

extension SatchelAsyncCommand {
    func run() async throws { try await execute() }
}
