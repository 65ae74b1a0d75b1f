import ArgumentParser
import Foundation
import SatchelAgent

extension AgentCommand {
    /// `satchel agent downloads on|off`: the device asks the backplane for its own download toggle.
    struct Downloads: SatchelAsyncCommand {
        enum Switch: String, ExpressibleByArgument, CaseIterable {
            case on, off
        }

        static let configuration = CommandConfiguration(
            commandName: "downloads",
            abstract: "Ask the backplane to let this device download (on) or not (off); on is granted only while its user has fewer download-enabled devices than the limit.",
            discussion: "The device must reach the backplane. Exit status: 0 when saved; 1 when refused (device-limit-reached: turn downloads off on another of the user's devices first).")
        @Argument(help: "on or off.") var toggle: Switch
        @OptionGroup var agent: AgentOptions

        func execute() async throws {
            let saved = try await agent.with { agent in try await agent.backplane.updateDownloadEnabled(toggle == .on) }
            print("downloads \(saved ? "on" : "off")")
        }
    }
}
