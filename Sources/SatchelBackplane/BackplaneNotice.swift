/// The backplane's notices on the device (what an app shows the user), each with a stable code.
public enum BackplaneNotice: String, Codable, Sendable, CaseIterable {
    /// The device was unregistered (its registration is gone).
    case unregistered = "unregistered"
    /// The user has as many download-enabled devices as allowed: this one is not enabled.
    case deviceLimitReached = "device-limit-reached"
    /// The device's credentials were refused.
    case invalidCredentials = "invalid-credentials"
    /// The device is registered already.
    case alreadyRegistered = "already-registered"
    /// The backplane could not be reached.
    case communicationsFailure = "communications-failure"
    /// A sync ended (with what it applied).
    case syncResult = "sync-result"
    /// The device was remotely killed: wiped and unregistered.
    case remoteKill = "remote-kill"
    /// The device's own change to the backplane's record of it (its download toggle) was saved, or refused.
    case deviceSaveResult = "device-save-result"
    /// The device's events (its logs for the operator) were delivered to the backplane.
    case logsSent = "logs-sent"

    /// The notice as a person reads it.
    public var text: String {
        switch self {
        case .unregistered: return "the device is no longer registered"
        case .deviceLimitReached: return "device limit reached: this device may not download"
        case .invalidCredentials: return "the device's credentials were refused"
        case .alreadyRegistered: return "the device is registered already"
        case .communicationsFailure: return "the backplane cannot be reached"
        case .syncResult: return "synced"
        case .remoteKill: return "the device was remotely killed: its downloads and licenses are gone"
        case .deviceSaveResult: return "the device's change was answered"
        case .logsSent: return "the device's events were sent"
        }
    }
}
