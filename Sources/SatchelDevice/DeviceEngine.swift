import Foundation
import SatchelAgent
import SatchelDownloads

/// A device's download engine assembled one way for every caller (the command line, an app, the example): the
/// downloads' tokens and headers sealed with the device key, and — when the data directory's device is registered —
/// the backplane's settings over the rules, the steps every download of a registered device takes in order (the
/// backplane's permission, the Satchel license, the FairPlay key), and the engine's events reported to the backplane.
public struct DeviceEngine: Sendable {
    /// The engine.
    public let downloads: DownloadManager
    /// The agent it works with, when the device is registered.
    public let agent: Agent?
    private let reporting: Task<Void, Never>?

    /// The steps a registered device's downloads take, in order: the backplane's permission, the Satchel license,
    /// the FairPlay key (kept sealed with `sealing` in `dataDirectory`).
    public static func steps(agent: Agent, dataDirectory: String, sealing: DeviceSecretBox) -> [any DownloadStep] {
        [PermissionStep(agent: agent), LicenseStep(agent: agent),
         FairPlayStep(agent: agent, keyring: FairPlayKeyring(dataDirectory: dataDirectory, sealing: sealing))]
    }

    /// Opens the engine of `configuration`'s data directory with `agent` (nil: a device not registered — no steps, no
    /// reports). Close it with ``close()``.
    public static func open(agent: Agent?, configuration: DownloadManager.Configuration,
                            environment: DownloadEnvironment = DownloadEnvironment()) async throws -> DeviceEngine {
        var configuration = configuration
        let box = try DeviceSecretBox(dataDirectory: configuration.dataDirectory)
        configuration.secrets = box
        if let settings = try await agent?.backplane.status().settings { configuration.rules = configuration.rules.governed(by: settings) }
        let steps = agent.map { Self.steps(agent: $0, dataDirectory: configuration.dataDirectory, sealing: box) } ?? []
        let downloads = try await DownloadManager(configuration: configuration, environment: environment, steps: steps)
        return DeviceEngine(downloads: downloads, agent: agent, reporting: agent.map { EngineActivity.start(downloads, agent: $0) })
    }

    /// Closes the engine, then waits until every event it emitted is recorded for the backplane. The agent stays open.
    public func close() async {
        await downloads.close()
        await reporting?.value
    }
}
