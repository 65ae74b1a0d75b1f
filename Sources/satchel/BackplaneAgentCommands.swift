import ArgumentParser
import Foundation
import SatchelAgent
import SatchelBackplane
import SatchelDevice
import SatchelDownloads

/// The device's side of the backplane on the command line: `agent sync`, `agent listen`, and the sync `download
/// run` makes before it works.
enum BackplaneCommands {
    /// One line per command applied: its kind and asset.
    static func line(_ command: BackplaneCommand) -> String {
        switch command.action {
        case let .deleteAsset(asset): return "applied \(command.sequence): delete-asset \(asset)"
        case let .downloadEnabled(enabled): return "applied \(command.sequence): download-enabled \(enabled)"
        default: return "applied \(command.sequence): \(command.action.kind)"
        }
    }

    /// Before `download run` works: one sync (a backplane that cannot be reached is said, and the permission step
    /// then holds every asset); a device the backplane disabled or killed downloads nothing and exits 1 with the reason.
    /// Answers whether the backplane answered.
    static func syncBeforeWork(_ agent: Agent, _ manager: DownloadManager) async throws -> Bool {
        var reached = true
        do {
            for command in try await BackplaneSync(agent: agent, downloads: manager).sync() { FileHandle.standardError.write(Data("satchel: \(line(command))\n".utf8)) }
        } catch let error as AgentError where error.isRetryable {
            reached = false
            FileHandle.standardError.write(Data("satchel: notice: \(BackplaneNotice.communicationsFailure.rawValue): \(error.description)\n".utf8))
        }
        let status = try await agent.backplane.status()
        let refusal: PermissionRefusal? = status.killed ? .deviceKilled : status.downloadEnabled ? nil : .deviceNotEnabled
        if let refusal {
            FileHandle.standardError.write(Data("satchel: error: \(refusal.text) (\(refusal.rawValue)); nothing downloaded\n".utf8))
            throw ExitCode(1)
        }
        return reached
    }

    /// Opens the agent and, when the data directory holds downloads, the engine; runs `body`.
    static func withDevice<T>(_ options: AgentOptions, _ body: (BackplaneSync) async throws -> T) async throws -> T {
        let directory = options.dataDirectory
        let hasDownloads = FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent("downloads.sqlite"))
        return try await options.with { agent in
            guard hasDownloads else { return try await body(BackplaneSync(agent: agent, downloads: nil)) }
            var configuration = DownloadManager.Configuration(dataDirectory: directory)
            configuration.secrets = try DeviceSecretBox(dataDirectory: directory)
            let manager = try await DownloadManager(configuration: configuration)
            let reporting = EngineActivity.start(manager, agent: agent)
            do {
                let value = try await body(BackplaneSync(agent: agent, downloads: manager))
                await manager.close()
                await reporting.value
                return value
            } catch {
                await manager.close()
                await reporting.value
                throw error
            }
        }
    }
}

extension AgentCommand {
    /// `satchel agent sync`: one sync with the backplane.
    struct Sync: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "Sync with the backplane once: apply its commands in order (a line each), keep its settings.",
            discussion: "Exit status: 0 when synced; 1 when the device was remotely killed (its downloads and licenses are gone and it is unregistered) or the backplane refused it.")
        @OptionGroup var agent: AgentOptions
        @Flag(help: "Print JSON: the commands applied and the device's backplane status.") var json = false

        func execute() async throws {
            let (applied, status) = try await BackplaneCommands.withDevice(agent) { sync in
                (try await sync.sync(), try await sync.agent.backplane.status())
            }
            if json {
                try RightsReport.print(SyncReport(applied: applied, downloadEnabled: status.downloadEnabled, killed: status.killed, settings: status.settings))
            } else {
                for command in applied { print(BackplaneCommands.line(command)) }
                print("synced: \(applied.count) command\(applied.count == 1 ? "" : "s") applied; downloads \(status.downloadEnabled ? "enabled" : "disabled")")
            }
            if status.killed {
                FileHandle.standardError.write(Data("satchel: notice: \(BackplaneNotice.remoteKill.rawValue): \(BackplaneNotice.remoteKill.text)\n".utf8))
                throw ExitCode(1)
            }
        }

        struct SyncReport: Encodable {
            var applied: [BackplaneCommand]
            var downloadEnabled: Bool
            var killed: Bool
            var settings: BackplaneSettings
        }
    }

    /// `satchel agent listen`: stays on the backplane's event stream.
    struct Listen: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "listen",
            abstract: "Stay connected to the backplane and apply its commands as they come (reconnecting with back-off); Ctrl-C stops.",
            discussion: "Exit status: 0 when stopped; 1 when the device was remotely killed.")
        @OptionGroup var agent: AgentOptions

        func execute() async throws {
            let killed = try await BackplaneCommands.withDevice(agent) { sync in
                let work = Task {
                    await sync.listen(onConnected: {
                        print("listening: connected to the backplane")
                        fflush(nil)
                    }, onApplied: { applied in
                        for command in applied { print(BackplaneCommands.line(command)) }
                        fflush(nil)
                    })
                }
                let watcher = Task {
                    await SignalWatch.interrupted()
                    work.cancel()
                }
                await work.value
                watcher.cancel()
                return (try? await sync.agent.backplane.status().killed) == true
            }
            if killed {
                FileHandle.standardError.write(Data("satchel: notice: \(BackplaneNotice.remoteKill.rawValue): \(BackplaneNotice.remoteKill.text)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
