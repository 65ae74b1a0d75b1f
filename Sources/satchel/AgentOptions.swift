import ArgumentParser
import Foundation
import SatchelBytes
import Logging
import SatchelAgent
import SatchelBackplane
import SatchelRights

/// `--data-dir` of the device agent (the download data directory when both are used) and its logging.
struct AgentOptions: ParsableArguments {
    @Option(name: .customLong("data-dir"), help: "The agent's data directory (device key, licenses; the download data directory when both are used).")
    var dataDirectory: String
    @Option(name: .customLong("trust-certificate"),
            help: "Trust this PEM certificate (a private certificate authority, a self-signed server) for HTTPS calls to the license server, from now on (kept in the data directory); repeat for several.")
    var trustCertificates: [String] = []
    @OptionGroup var logging: LoggingOptions

    /// Opens the agent; its warnings (a clock that went back) go to stderr.
    func open() async throws -> Agent {
        try logging.bootstrap(fallback: .warning)
        return try await Agent(dataDirectory: dataDirectory, trustedCertificates: trustCertificates, logger: Logger(label: "satchel.agent"))
    }

    /// Runs `body` with the agent, closing it after; the agent's events go to stderr, a line each.
    func with<T>(_ body: (Agent) async throws -> T) async throws -> T {
        let agent = try await open()
        do {
            let value = try await body(agent)
            await Self.close(agent)
            return value
        } catch {
            await Self.close(agent)
            throw error
        }
    }

    private static func close(_ agent: Agent) async {
        await agent.close()  // ends the event stream after what it holds
        for await event in agent.events {
            let line: String
            switch event {
            case let .notice(notice, detail):
                FileHandle.standardError.write(Data("satchel: notice: \(notice.rawValue): \(detail)\n".utf8))
                continue
            case .untrustedTime: line = "untrusted-time: the device clock went back; date-based rights are untrusted until the server's time confirms it (license sync)"
            case .trustRestored: line = "trust-restored: the server's time confirmed the device clock"
            case let .releaseDelivered(licenseID): line = "release-delivered: \(licenseID)"
            case let .releaseRefused(licenseID, problem): line = "release-refused: \(licenseID) (\(problem)); no longer owed"
            case let .licenseRevoked(licenseID, asset): line = "license-revoked: \(asset) (\(licenseID)): the license server holds it released; removed"
            }
            FileHandle.standardError.write(Data("satchel: event: \(line)\n".utf8))
        }
    }
}

/// `satchel agent`: the device's identity.
struct AgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "agent",
                                                    abstract: "The device agent: register this device with a license server, sync with its backplane.",
                                                    subcommands: [Register.self, Sync.self, Listen.self, Downloads.self, Subscribe.self, Unsubscribe.self, Subscriptions.self])

    struct Register: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(commandName: "register",
                                                        abstract: "Register the device key with a license server; prints the device ID.")
        @Option(help: "The license server (satchel serve), e.g. http://127.0.0.1:8080.") var server: String
        @Option(help: "An entitlement token of the device's user (or --token-file, $SATCHEL_TOKEN).") var token: String?
        @OptionGroup var tokenSource: TokenSource
        @OptionGroup var agent: AgentOptions
        @Option(help: "A name for the device.") var name: String?
        @Option(name: .customLong("external-id"), help: "The application's own ID for the device.") var externalID: String?

        func execute() async throws {
            let token = try tokenSource.required(token)
            let (id, status) = try await agent.with { agent in
                (try await agent.register(server: server, token: token, name: name, externalID: externalID), try? await agent.backplane.status())
            }
            print(id)
            // What the backplane said: device-limit-reached, already-registered.
            if let notice = status?.registrationNotice ?? (status?.downloadEnabled == false ? .deviceLimitReached : nil) {
                FileHandle.standardError.write(Data("satchel: notice: \(notice.rawValue): \(notice.text)\n".utf8))
            }
        }
    }
}

/// A license's rights as `license list` and `rights` print them.
struct RightsReport: Encodable {
    var asset: String
    var status: String
    var start: Date?
    var end: Date?
    var expireAfterFirstUse: Bool
    var playbackSeconds: UInt32?
    var validitySeconds: UInt32?
    var persistent: Bool
    var keyIDs: [String]?
    var licenseID: String?
    var firstUse: Date?
    var pendingRelease: Bool
    /// What the license demands of the outputs (HDCP, AirPlay, external displays, analog).
    var outputControls: OutputControls?

    init(asset: String, evaluation: RightsEvaluation, license: StoredLicense?, pendingRelease: Bool = false) {
        self.asset = asset
        status = evaluation.status.rawValue
        start = evaluation.start
        end = evaluation.end
        expireAfterFirstUse = evaluation.expireAfterFirstUse
        playbackSeconds = license?.rights.playbackSeconds
        validitySeconds = license?.rights.validitySeconds
        persistent = license?.persistent ?? false
        keyIDs = license?.keyIDs
        licenseID = license?.licenseID
        firstUse = license?.firstUse
        self.pendingRelease = pendingRelease
        outputControls = license?.rights.output
    }

    /// One line for people.
    var line: String {
        func date(_ value: Date?) -> String { value.map { ISODate.string($0) } ?? "-" }
        var fields = [asset, status, "start \(date(start))", "end \(date(end))"]
        if expireAfterFirstUse { fields.append("expires after first use") }
        if let playbackSeconds { fields.append("playback window \(playbackSeconds) s") }
        fields.append(persistent ? "persistent" : "streaming")
        if let keyIDs { fields.append("keys \(keyIDs.joined(separator: ","))") }
        if pendingRelease { fields.append("release pending") }
        return fields.joined(separator: "\t")
    }

    static func print(_ reports: some Encodable) throws {
        Swift.print(String(decoding: try JSONCoding.encoder(.pretty).encode(reports), as: UTF8.self))
    }
}

/// `satchel rights ASSET-ID`: the rights status now; exit 0 only when valid.
struct RightsCommand: SatchelAsyncCommand {
    static let configuration = CommandConfiguration(commandName: "rights", abstract: "Print the rights status of an asset; exit 0 only when playback is allowed.")
    @Argument(help: "The asset ID.") var assetID: String
    @OptionGroup var agent: AgentOptions
    @Flag(help: "Print JSON.") var json = false

    func execute() async throws {
        let (evaluation, license) = try await agent.with { agent in
            (try await agent.rights(asset: assetID), try await agent.licenses().first { $0.license.assetID == assetID }?.license)
        }
        let report = RightsReport(asset: assetID, evaluation: evaluation, license: license)
        if json { try RightsReport.print(report) } else { print(report.line) }
        if evaluation.status != .valid { throw ExitCode(1) }
    }
}
