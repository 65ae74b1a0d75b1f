import Foundation
import SatchelBackplane

/// What the backplane last told this device, kept in the sealed device state (an edit of the store does not
/// re-enable a device the backplane disabled): the last command applied, whether downloads are enabled, the settings,
/// and whether the device was killed.
public struct BackplaneStatus: Codable, Sendable, Equatable {
    /// The commands applied, in order.
    public var ledger = CommandLedger()
    /// Whether the backplane lets this device download.
    public var downloadEnabled = true
    /// The settings every device takes.
    public var settings = BackplaneSettings()
    /// Remotely killed: wiped and unregistered.
    public var killed = false
    /// When the device last synced.
    public var lastSync: Date?
    /// What the backplane said when the device registered (device limit reached, already registered).
    public var registrationNotice: BackplaneNotice?
    /// The feeds the device follows, as the backplane last said (nil: none yet).
    public var feeds: [String]?

    /// A device that never synced.
    public init() {}
}

/// One sync's outcome: what the server said, and the commands to apply now, in order (each once).
public struct BackplanePull: Sendable, Equatable {
    /// The server's answer.
    public var answer: BackplaneSyncAnswer
    /// The commands due, in order.
    public var due: [BackplaneCommand]
}
