import SatchelBackplane

extension Agent {
    /// This device's side of the backplane (sync, acknowledgements, permission, the event stream).
    public nonisolated var backplane: DeviceBackplane { DeviceBackplane(agent: self) }

    /// What this device reports to the backplane (download, playback, license and command events), kept until sent.
    public nonisolated var activity: DeviceActivity { DeviceActivity(agent: self) }
    /// Delegated license acquisition: challenges the app sends its own way, and their answers installed.
    public nonisolated var delegated: DelegatedLicenses { DelegatedLicenses(agent: self) }
}

extension Agent {
    /// Records an event for the backplane (``DeviceActivity/record(_:asset:reason:seconds:detail:)``).
    func recordActivity(_ kind: DeviceEventKind, asset: String?, reason: String?, seconds: Double?, detail: String?) async throws(AgentError) -> Bool {
        try await activityLog.record(kind, asset: asset, reason: reason, seconds: seconds, detail: detail)
    }

    /// The events waiting to be sent.
    func pendingActivity() async throws(AgentError) -> [DeviceEvent] {
        try await activityLog.opened().pending(limit: EventOutbox.capacity)
    }

    /// Sends the waiting events; a device not registered sends nothing.
    func sendActivity() async throws(AgentError) -> Int {
        guard let registration = device.registration else { return 0 }
        return try await activityLog.send(to: registration.server, through: requests)
    }
}
