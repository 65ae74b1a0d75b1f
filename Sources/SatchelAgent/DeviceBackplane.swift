import AsyncHTTPClient
import NIOCore
import SatchelBackplane

/// An agent's side of the backplane, as an app calls it (`agent.backplane`): what the backplane last said (kept
/// sealed), syncs, acknowledgements, download permission, the event stream, and the unregistering a kill asks for.
public struct DeviceBackplane: Sendable {
    let agent: Agent

    /// What the backplane last told this device (kept sealed: an edit of the store does not change it).
    public func status() async throws(AgentError) -> BackplaneStatus { try await AgentBackplane.status(agent) }

    /// Syncs with the backplane: keeps its toggle and settings, and answers the commands to apply now, in order.
    /// Apply each, then ``acknowledge(_:)`` it.
    public func sync() async throws(AgentError) -> BackplanePull { try await AgentBackplane.sync(agent) }

    /// Acknowledges an applied command to the backplane and records it (its toggle, settings or kill).
    public func acknowledge(_ command: BackplaneCommand) async throws(AgentError) { try await AgentBackplane.acknowledge(agent, command) }

    /// Asks the backplane to turn this device's downloading on or off — the backplane-enforced toggle; on only while
    /// its user has fewer download-enabled devices than the limit (else `AgentError.server` with type
    /// `device-limit-reached`). The device must be online. Answers the toggle as saved; the result is also an
    /// ``AgentEvent/notice(_:detail:)`` of `BackplaneNotice.deviceSaveResult`.
    public func updateDownloadEnabled(_ enabled: Bool) async throws(AgentError) -> Bool {
        try await AgentBackplane.updateDownloadEnabled(agent, enabled)
    }

    /// Asks the backplane whether this device may download `asset`.
    public func permission(asset: String) async throws(AgentError) -> BackplanePermissionAnswer {
        try await AgentBackplane.permission(agent, asset: asset)
    }

    /// Tells the backplane the device deleted `asset`, so that it counts no more against the device's and the
    /// account's limits.
    public func releasePermission(asset: String) async throws(AgentError) { try await AgentBackplane.releasePermission(agent, asset: asset) }

    /// Takes a concurrent-stream slot to play `asset` (refused, with the reason, when the account plays as many
    /// streams as it may). Renew it well within its lease while playing; release it at the end.
    public func acquireSlot(asset: String) async throws(AgentError) -> StreamSlotAnswer { try await AgentSlots.acquire(agent, asset: asset) }

    /// Renews the slot `id` for another lease; `AgentError.server` with type `slot-lost` once its lease ended (take
    /// a new slot then).
    public func renewSlot(_ id: String) async throws(AgentError) -> StreamSlotAnswer { try await AgentSlots.renew(agent, slot: id) }

    /// Frees the slot `id` (playback ended).
    public func releaseSlot(_ id: String) async throws(AgentError) { try await AgentSlots.release(agent, slot: id) }

    /// Subscribes this device to a feed: its new items arrive at each sync. Subscribing
    /// again changes the quota settings.
    public func subscribe(_ request: SubscriptionRequest) async throws(AgentError) -> Subscription {
        try await AgentSubscriptions.subscribe(agent, request)
    }

    /// Ends the subscription to `feed` (`AgentError.server` with type `not-subscribed` when there was none).
    public func unsubscribe(feed: String) async throws(AgentError) { try await AgentSubscriptions.unsubscribe(agent, feed: feed) }

    /// The device's subscriptions, as the backplane keeps them.
    public func subscriptions() async throws(AgentError) -> [Subscription] { try await AgentSubscriptions.subscriptions(agent) }

    /// Tells the backplane the last item applied of each feed and answers the items after them (and, with `since`,
    /// the items published since then, listed). Apply the items, then sync again with them applied.
    public func syncFeeds(_ request: SubscriptionSyncRequest) async throws(AgentError) -> SubscriptionSyncAnswer {
        try await AgentSubscriptions.sync(agent, request)
    }

    /// Forgets the registration (a remote kill): the device's later calls need a new registration, which the
    /// backplane refuses for a killed device.
    public func unregister() async throws(AgentError) { try await AgentBackplane.unregister(agent) }

    /// Reads the backplane's event stream until it ends, `window` passes or `onEvent` answers false, handing each
    /// event to `onEvent`.
    public func listen(window: TimeAmount = .minutes(5), onEvent: @Sendable (EventStreamParser.Event) async -> Bool) async throws(AgentError) {
        try await AgentBackplane.listen(agent, window: window, onEvent: onEvent)
    }
}
