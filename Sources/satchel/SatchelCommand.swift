import ArgumentParser

/// `satchel`: the root command.
struct SatchelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "satchel",
        abstract: "Satchel: package, protect, license, download and play protected video.",
        version: "0.1.0",
        subcommands: [PackageCommand.self, FPSCommand.self])
}

/// `satchel fps`: FairPlay Streaming key server tools.
struct FPSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fps",
        abstract: "FairPlay Streaming: build CKCs, inspect SPC/CKC pairs, simulate a device.",
        subcommands: [FPSCKCCommand.self, FPSInspectCommand.self, FPSSimulateCommand.self, FPSRoundTripCommand.self])
}
