import ArgumentParser
import Foundation
import SatchelAgent
import SatchelBackplane
import SatchelBytes
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

    /// One line per command applied, per subscription item added, deleted or deferred, and the subscriptions' failure.
    static func lines(_ report: BackplaneSync.Report) -> [String] {
        var lines = report.applied.map(line)
        if let subscriptions = report.subscriptions {
            lines += subscriptions.added.map { "subscription: added \($0)" } + subscriptions.reset.map { "subscription: reset \($0) to make room (its files deleted; it stays in the queue, paused)" }
                + subscriptions.deferred.map { "subscription: deferred \($0) (its feed's quota is full)" }
                + subscriptions.skipped.sorted { $0.key < $1.key }.map { "subscription: skipped \($0.key): \($0.value)" }
        }
        if let failure = report.subscriptionFailure { lines.append("subscription: not synced now (tried again at the next sync): \(failure)") }
        return lines
    }

    /// Before `download run` works: one sync (a backplane that cannot be reached is said, and the permission step
    /// then holds every asset); a device the backplane disabled or killed downloads nothing and exits 1 with the reason.
    /// Answers whether the backplane answered. The sync gives the engine `rules` (the command line's) governed by the
    /// backplane's settings as it left them.
    static func syncBeforeWork(_ agent: Agent, _ manager: DownloadManager, rules: DownloadRules) async throws -> Bool {
        var reached = true
        do {
            for line in lines(try await BackplaneSync(agent: agent, downloads: manager, rules: rules).sync()) { FileHandle.standardError.write(Data("satchel: \(line)\n".utf8)) }
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

    /// Opens the agent and, when the data directory holds downloads, the device follows feeds or `downloading` (its
    /// background loop then running), the engine; runs `body`.
    static func withDevice<T>(_ options: AgentOptions, downloading network: NetworkOptions? = nil, _ body: (BackplaneSync) async throws -> T) async throws -> T {
        let downloading = network != nil
        let directory = options.dataDirectory
        let hasDownloads = FileManager.default.fileExists(atPath: (directory as NSString).appendingPathComponent("downloads.sqlite"))
        return try await options.with { agent in
            let follows = !((try? await agent.backplane.status().feeds) ?? []).isEmpty
            guard downloading || hasDownloads || follows else { return try await body(BackplaneSync(agent: agent, downloads: nil)) }
            var configuration = DownloadManager.Configuration(dataDirectory: directory)
            let rules = try network?.applied(to: configuration.rules) ?? configuration.rules
            configuration.rules = rules
            let environment = DownloadEnvironment(network: try network?.monitor() ?? FixedNetwork.unmetered)
            let engine = try await DeviceEngine.open(agent: agent, configuration: configuration, environment: environment)
            let manager = engine.downloads
            if downloading { await manager.start() }
            let result: Result<T, any Error>
            do { result = .success(try await body(BackplaneSync(agent: agent, downloads: manager, rules: rules))) } catch { result = .failure(error) }
            await engine.close()
            return try result.get()
        }
    }
}

extension AgentCommand {
    /// `satchel agent sync`: one sync with the backplane.
    struct Sync: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "sync",
            abstract: "Sync with the backplane once: apply its commands in order (a line each), keep its settings, enqueue the new items of the feeds the device follows.",
            discussion: "Exit status: 0 when synced; 1 when the device was remotely killed (its downloads and licenses are gone and it is unregistered) or the backplane refused it.")
        @OptionGroup var agent: AgentOptions
        @Flag(help: "Print JSON: the commands applied, the subscription items, and the device's backplane status.") var json = false
        @Option(name: .customLong("feeds-since"), help: "Also list the feed items published since this date (ISO 8601), of the feeds followed; they are not downloaded.")
        var feedsSince: String?
        @Flag(name: .customLong("all-feeds"), help: "With --feeds-since: list the items of every feed, not only those followed.") var allFeeds = false

        func execute() async throws {
            let since = try feedsSince.map { text in
                guard let date = ISODate.date(text) else { throw CLIError("--feeds-since is an ISO 8601 date such as 2026-11-01 or 2026-11-01T10:00:00Z") }
                return date
            }
            if allFeeds, since == nil { throw CLIError("--all-feeds goes with --feeds-since") }
            let (report, listing, status) = try await BackplaneCommands.withDevice(agent) { sync in
                let report = try await sync.sync()
                var listing: [FeedItem]?
                if let since { listing = try await sync.agent.backplane.syncFeeds(SubscriptionSyncRequest(since: since, allFeeds: allFeeds)).listing ?? [] }
                return (report, listing, try await sync.agent.backplane.status())
            }
            if json {
                try RightsReport.print(SyncReport(applied: report.applied, subscriptions: report.subscriptions, listing: listing,
                                                  downloadEnabled: status.downloadEnabled, killed: status.killed, settings: status.settings))
            } else {
                for line in BackplaneCommands.lines(report) { print(line) }
                for item in listing ?? [] { print(["listed", item.feedID, item.assetID, ISODate.string(item.published), item.title ?? ""].joined(separator: "\t")) }
                let applied = report.applied.count
                print("synced: \(applied) command\(applied == 1 ? "" : "s") applied; downloads \(status.downloadEnabled ? "enabled" : "disabled")"
                      + (report.subscriptions.map { "; subscriptions: \($0.summary)" } ?? ""))
            }
            if status.killed {
                FileHandle.standardError.write(Data("satchel: notice: \(BackplaneNotice.remoteKill.rawValue): \(BackplaneNotice.remoteKill.text)\n".utf8))
                throw ExitCode(1)
            }
        }

        struct SyncReport: Encodable {
            var applied: [BackplaneCommand]
            var subscriptions: SubscriptionReport?
            var listing: [FeedItem]?
            var downloadEnabled: Bool
            var killed: Bool
            var settings: BackplaneSettings
        }
    }

    /// `satchel agent listen`: stays on the backplane's event stream.
    struct Listen: SatchelAsyncCommand {
        static let configuration = CommandConfiguration(
            commandName: "listen",
            abstract: "Stay connected to the backplane: apply its commands, enqueue its feeds' new items and download the queue as they come (reconnecting with back-off); Ctrl-C stops.",
            discussion: "Exit status: 0 when stopped; 1 when the device was remotely killed.")
        @OptionGroup var agent: AgentOptions
        @OptionGroup var network: NetworkOptions

        func execute() async throws {
            let killed = try await BackplaneCommands.withDevice(agent, downloading: network) { sync in
                let stop = SignalWatch.caught()  // before "connected" is printed
                let work = Task {
                    await sync.listen(onConnected: {
                        print("listening: connected to the backplane")
                        fflush(nil)
                    }, onSynced: { report in
                        for line in BackplaneCommands.lines(report) { print(line) }
                        fflush(nil)
                    })
                }
                let watcher = Task {
                    await stop.next()
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
