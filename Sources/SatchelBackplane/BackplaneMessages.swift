import Foundation

/// `GET /backplane/sync`'s answer: what the device must know since the last command it applied — its toggle and state,
/// the commands after that one in order, the settings in force, and the server's time.
public struct BackplaneSyncAnswer: Codable, Sendable, Equatable {
    /// The device.
    public var deviceID: String
    /// Whether it may download.
    public var downloadEnabled: Bool
    /// `active` or `killed`.
    public var state: BackplaneDevice.State
    /// The commands not yet acknowledged after the cursor, in order.
    public var commands: [BackplaneCommand]
    /// Every command up to this sequence is acknowledged (a device that lost its record of what it applied takes up
    /// from here).
    public var acknowledged: Int64
    /// The settings every device takes.
    public var settings: BackplaneSettings
    /// The server's time when it answered.
    public var serverTime: Date

    /// An answer.
    public init(deviceID: String, downloadEnabled: Bool, state: BackplaneDevice.State, commands: [BackplaneCommand], acknowledged: Int64,
                settings: BackplaneSettings, serverTime: Date) {
        self.acknowledged = acknowledged
        self.deviceID = deviceID
        self.downloadEnabled = downloadEnabled
        self.state = state
        self.commands = commands
        self.settings = settings
        self.serverTime = serverTime
    }
}

/// `POST /backplane/download-enabled`'s answer: the device's download toggle as the backplane saved it.
public struct DownloadToggleAnswer: Codable, Sendable, Equatable {
    /// The device.
    public var deviceID: String
    /// Whether it may download now.
    public var downloadEnabled: Bool

    /// An answer.
    public init(deviceID: String, downloadEnabled: Bool) {
        self.deviceID = deviceID
        self.downloadEnabled = downloadEnabled
    }
}

/// `POST /backplane/permissions`' answer: granted, or refused with a reason (stable code and text).
public struct BackplanePermissionAnswer: Codable, Sendable, Equatable {
    /// The asset asked about.
    public var assetID: String
    /// Whether it may be downloaded.
    public var granted: Bool
    /// Why not (absent when granted).
    public var reason: PermissionRefusal?
    /// The reason as a person reads it.
    public var detail: String?

    /// The answer for `permission`.
    public init(assetID: String, permission: DownloadPermission) {
        self.assetID = assetID
        granted = permission.isGranted
        if case let .refused(reason) = permission {
            self.reason = reason
            detail = reason.text
        }
    }

    /// The permission it carries (a refusal without a known reason reads as the device not enabled).
    public var permission: DownloadPermission {
        granted ? .granted : .refused(reason ?? .deviceNotEnabled)
    }
}

/// What the operator's `limits` requests carry and answer.
public struct BackplaneLimitsBody: Codable, Sendable, Equatable {
    /// The user whose limits these are; nil: the global limits.
    public var user: String?
    /// The limits.
    public var limits: BackplaneLimits

    /// A body.
    public init(user: String?, limits: BackplaneLimits) {
        self.user = user
        self.limits = limits
    }
}

/// A user as the operator sees it: their devices and the limits that hold for them.
public struct BackplaneUser: Codable, Sendable, Equatable {
    /// The user (the entitlement token's subject).
    public var user: String
    /// The limits in force for the user (their own fields over the global ones).
    public var limits: BackplaneLimits
    /// The user's own limits, when set.
    public var ownLimits: BackplaneLimits?
    /// The user's devices.
    public var devices: [BackplaneDevice]
    /// How many of them may download.
    public var enabledDevices: Int

    /// A user.
    public init(user: String, limits: BackplaneLimits, ownLimits: BackplaneLimits?, devices: [BackplaneDevice]) {
        self.user = user
        self.limits = limits
        self.ownLimits = ownLimits
        self.devices = devices
        enabledDevices = devices.filter { $0.downloadEnabled && $0.state == .active }.count
    }
}
