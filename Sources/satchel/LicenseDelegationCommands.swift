import ArgumentParser
import Foundation
import SatchelAgent
import SatchelLicensing

extension LicenseCommand {
    /// `satchel license challenge ASSET`: the signed license request, for the app to send its own way.
    struct Challenge: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "challenge",
            abstract: "Make a license request for an asset without sending it (delegated acquisition): prints JSON with the url and the body to POST.",
            discussion: """
                Send it your own way — your backend, your cookies, a portal — with the user's entitlement token in \
                Authorization: Bearer, within five minutes, and give the answer to `satchel license install`. Each challenge \
                is answered once.
                """)
        @Argument(help: "The asset ID.") var assetID: String
        @OptionGroup var agent: AgentOptions
        @OptionGroup var request: LicenseAskOptions

        func execute() async throws {
            let (server, persistent, customData) = (request.server, request.persistent, request.customData)
            let challenge = try await agent.with { agent in
                try await agent.delegated.challenge(asset: assetID, persistent: persistent, server: server, customData: customData)
            }
            try RightsReport.print(challenge)
        }
    }

    /// `satchel license install FILE`: the answer to a challenge, installed.
    struct Install: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "install",
            abstract: "Install the license server's answer to a `license challenge` (the answer's body: a file, or - for standard input).")
        @Argument(help: "The answer's file, or - to read standard input.") var answer: String
        @OptionGroup var agent: AgentOptions

        /// The most an answer may be.
        static let maximumAnswer = 1 << 20

        func execute() async throws {
            let data: Data
            if answer == "-" {
                data = FileHandle.standardInput.readData(ofLength: Self.maximumAnswer + 1)  // blocking-ok: the command's own input, before any work
            } else {
                data = Data(try FileIO.read(answer, what: "the license answer"))
            }
            guard data.count <= Self.maximumAnswer else { throw CLIError("the license answer is larger than 1 MB: it is not one") }
            let (license, evaluation) = try await agent.with { agent in
                let license = try await agent.delegated.install(data)
                return (license, try await agent.rights(asset: license.assetID))
            }
            print("license \(license.licenseID) for \(license.assetID): \(evaluation.status.rawValue)\(license.persistent ? ", persistent" : "")")
        }
    }
}

/// What a license request asks for, sent by the agent (`license acquire`) or by the app (`license challenge`).
struct LicenseAskOptions: ParsableArguments {
    @Option(help: "The license server (default: the one the device registered with).") var server: String?
    @Flag(help: "Ask for a persistent (offline) license.") var persistent = false
    @Option(name: .customLong("custom-data"), help: "Data for the license server's policy (e.g. XML), sent with the request as it is.")
    var customData: String?

    func validate() throws {
        if let customData, customData.utf8.count > LicenseService.maximumCustomData {
            throw ValidationError("--custom-data is at most \(LicenseService.maximumCustomData) bytes")
        }
    }
}
