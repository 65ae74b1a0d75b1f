import Foundation
import Logging
import SatchelAgent
import SatchelBackplane
import SatchelBytes
import SatchelDownloads

/// The device side of the backplane: a sync applies the commands due in the order issued, each once,
/// and acknowledges each — a remote delete or wipe through the download engine (the store's one owner) and the
/// agent (licenses released), a kill as a wipe and then the registration forgotten; the toggle and the settings
/// are kept sealed by the agent; the feeds the device follows deliver their new items (``SubscriptionSync``).
/// `listen` stays on the server's event stream and syncs whenever something arrives.
public struct BackplaneSync: Sendable {
    /// The device's agent.
    public let agent: Agent
    let downloads: DownloadManager?
    let dataSource: any SubscriptionDataSource
    let rules: DownloadRules?
    let logger: Logger

    /// Syncs `agent`'s device, removing and adding assets through `downloads` (nil: this device downloads nothing),
    /// its feeds' items looked up through `dataSource`. With `rules` (the device's own download rules), each sync gives
    /// the engine those rules governed by the backplane's settings.
    public init(agent: Agent, downloads: DownloadManager?, dataSource: any SubscriptionDataSource = FeedDataSource(), rules: DownloadRules? = nil,
                logger: Logger = Logger(label: "satchel.backplane")) {
        self.agent = agent
        self.downloads = downloads
        self.dataSource = dataSource
        self.rules = rules
        self.logger = logger
    }

    /// What one sync did.
    public struct Report: Sendable {
        /// The commands applied, in order.
        public var applied: [BackplaneCommand] = []
        /// What the subscriptions' sync did (nil: the device follows no feed, or downloads nothing).
        public var subscriptions: SubscriptionReport?
        /// Why the subscriptions' sync failed (it is tried again at the next sync).
        public var subscriptionFailure: String?
    }

    /// One sync: the commands applied, in order, then the feeds' new items, then the device's events sent (a failure
    /// to send them keeps them for the next sync). A device killed by it ends unregistered.
    @discardableResult
    public func sync() async throws -> Report {
        let pull = try await agent.backplane.sync()
        var report = Report()
        for command in pull.due {
            try await apply(command)
            try await agent.backplane.acknowledge(command)
            report.applied.append(command)
            _ = try? await agent.activity.record(.commandApplied, asset: command.asset, reason: command.action.kind)
            if case .kill = command.action {
                await sendEvents()
                try await agent.backplane.unregister()
                logger.notice("backplane: remote kill: the device's downloads and licenses are gone and it is unregistered")
                return report
            }
        }
        if let downloads, let rules { await downloads.setRules(rules.governed(by: try await agent.backplane.status().settings)) }
        if let downloads, !(try await agent.backplane.status().feeds ?? []).isEmpty {
            do {
                report.subscriptions = try await SubscriptionSync(agent: agent, downloads: downloads, dataSource: dataSource, logger: logger).run()
            } catch {
                report.subscriptionFailure = "\(error)"
                logger.warning("backplane: the subscriptions' sync failed (tried again at the next sync): \(error)")
            }
        }
        await sendEvents()
        return report
    }

    /// Sends the events waiting; one that cannot be sent now waits for the next sync.
    func sendEvents() async {
        do { try await agent.activity.send() } catch { logger.info("backplane: events not sent now (kept for the next sync): \(error)") }
    }

    /// Applies one command's effect on the device's store (acknowledging is the caller's).
    func apply(_ command: BackplaneCommand) async throws {
        switch command.action {
        case let .deleteAsset(asset):
            if let downloads {
                for item in try await downloads.assets() where item.id == asset || item.options.license?.assetID == asset {
                    try await downloads.remove(item.id)
                }
            }
            if try await agent.licenses().contains(where: { $0.license.assetID == asset }) { _ = try await agent.release(asset: asset) }
        case .wipe, .kill:
            try await downloads?.deleteAll()
            _ = try? await agent.activity.record(.reset, reason: command.action.kind)
            for asset in Set(try await agent.licenses().map(\.license.assetID)) { _ = try await agent.release(asset: asset) }
        case .downloadEnabled, .settings:
            break  // kept by the agent when acknowledged
        }
    }

    /// Stays on the event stream, syncing at once and whenever an event arrives; reconnects with back-off (1 s
    /// doubling to 60 s) until the task is cancelled or the device is killed. `onConnected` hears each connection's first
    /// event (the settings the server sends first); `onSynced` what each sync did.
    public func listen(onConnected: @Sendable () async -> Void = {}, onSynced: @Sendable (Report) async -> Void = { _ in }) async {
        var delay: Duration = .seconds(1)
        while !Task.isCancelled {
            do {
                await onSynced(try await sync())
                if try await agent.backplane.status().killed { return }
                let first = Locked(true)
                try await agent.backplane.listen { _ in
                    let isFirst = first.withLock { value -> Bool in
                        defer { value = false }
                        return value
                    }
                    if isFirst { await onConnected() }
                    do {
                        await onSynced(try await sync())
                    } catch {
                        logger.warning("backplane: sync failed: \(error)")
                    }
                    return (try? await agent.backplane.status().killed) != true
                }
                delay = .seconds(1)
            } catch {
                if (try? await agent.backplane.status().killed) == true || (error as? AgentError) == .notRegistered { return }
                logger.warning("backplane: not connected (trying again in \(delay)): \(error)")
            }
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(60))
        }
    }
}
