import SatchelBackplane

extension Agent {
    /// This device's side of the backplane (sync, acknowledgements, permission, the event stream).
    public nonisolated var backplane: DeviceBackplane { DeviceBackplane(agent: self) }

    /// What this device reports to the backplane (download, playback, license and command events), kept until sent.
    public nonisolated var activity: DeviceActivity { DeviceActivity(agent: self) }
    /// Delegated license acquisition: challenges the app sends its own way, and their answers installed.
    public nonisolated var delegated: DelegatedLicenses { DelegatedLicenses(agent: self) }
}
