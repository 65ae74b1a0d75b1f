import AsyncHTTPClient
import NIOCore
import SatchelBackplane

extension Agent {
    /// What the backplane last told this device (kept sealed: an edit of the store does not change it).
    public func backplaneStatus() async throws(AgentError) -> BackplaneStatus { try await AgentBackplane.status(self) }

    /// Syncs with the backplane: keeps its toggle and settings, and answers the commands to apply now, in order.
    /// Apply each, then ``acknowledge(_:)`` it.
    public func backplaneSync() async throws(AgentError) -> BackplanePull { try await AgentBackplane.sync(self) }

    /// Acknowledges an applied command to the backplane and records it (its toggle, settings or kill).
    public func acknowledge(_ command: BackplaneCommand) async throws(AgentError) { try await AgentBackplane.acknowledge(self, command) }

    /// Asks the backplane whether this device may download `asset`.
    public func downloadPermission(asset: String) async throws(AgentError) -> BackplanePermissionAnswer {
        try await AgentBackplane.permission(self, asset: asset)
    }

    /// Forgets the registration (a remote kill): the device's later calls need a new registration, which the
    /// backplane refuses for a killed device.
    public func unregister() throws(AgentError) {
        try identity.forget(dataDirectory: dataDirectory)
        identity.registration = nil
    }

    func backplaneStreamRequest() async throws(AgentError) -> HTTPClientRequest { try await AgentBackplane.streamRequest(self) }

    /// Reads the backplane's event stream until it ends, `window` passes or `onEvent` answers false, handing each
    /// event to `onEvent`.
    public nonisolated func listenToBackplane(window: TimeAmount = .minutes(5),
                                              onEvent: @Sendable (EventStreamParser.Event) async -> Bool) async throws(AgentError) {
        try await AgentBackplane.listen(self, window: window, onEvent: onEvent)
    }
}
