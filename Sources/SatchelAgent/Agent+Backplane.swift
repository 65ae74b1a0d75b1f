import SatchelBackplane

extension Agent {
    /// This device's side of the backplane (sync, acknowledgements, permission, the event stream).
    public nonisolated var backplane: DeviceBackplane { DeviceBackplane(agent: self) }
}
