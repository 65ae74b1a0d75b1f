import Foundation

/// A device the backplane knows: its ID (the agent's registration, kept across restarts), the
/// user it belongs to (the entitlement token's subject), the external ID the operator may know it by, and whether it
/// may download.
public struct BackplaneDevice: Codable, Sendable, Equatable {
    /// The device ID (the agent's registration).
    public var deviceID: String
    /// The user it belongs to.
    public var user: String
    /// An ID the operator's own systems give the device, unique among devices when set.
    public var externalID: String?
    /// A name people read ("Living-room iPad").
    public var name: String
    /// The platform (`linux`, `ios`, …).
    public var platform: String
    /// Whether the device may download (the backplane-enforced toggle).
    public var downloadEnabled: Bool
    /// Active, or killed (wiped and unregistered: its later calls are refused).
    public var state: State
    /// When it last synced.
    public var lastSync: Date?
    /// When it registered.
    public var registered: Date

    /// A device's life.
    public enum State: String, Codable, Sendable, CaseIterable {
        /// Registered and in use.
        case active
        /// Remotely killed: wiped, unregistered, refused from then on.
        case killed
    }

    /// A device as it registers.
    public init(deviceID: String, user: String, externalID: String? = nil, name: String = "", platform: String = "",
                downloadEnabled: Bool, state: State = .active, lastSync: Date? = nil, registered: Date) {
        self.deviceID = deviceID
        self.user = user
        self.externalID = externalID
        self.name = name
        self.platform = platform
        self.downloadEnabled = downloadEnabled
        self.state = state
        self.lastSync = lastSync
        self.registered = registered
    }
}

/// How an operator names a device: its device ID, or `ext:` and its external ID (a remote delete or wipe
/// may name the device by the external ID).
public enum DeviceReference: Sendable, Equatable, CustomStringConvertible {
    /// By device ID.
    case device(String)
    /// By external ID.
    case external(String)

    /// The prefix that names an external ID.
    public static let externalPrefix = "ext:"
    /// The longest ID accepted.
    public static let maximumLength = 256

    /// `text` read: `ext:ID` is an external ID, anything else a device ID; empty, over-long or control characters
    /// are refused.
    public init(_ text: String) throws(BackplaneError) {
        let external = text.hasPrefix(Self.externalPrefix)
        let id = external ? String(text.dropFirst(Self.externalPrefix.count)) : text
        guard !id.isEmpty, id.utf8.count <= Self.maximumLength, !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw .badRequest("a device is named by its device ID or ext:EXTERNAL-ID (1 to \(Self.maximumLength) bytes, no control characters)")
        }
        self = external ? .external(id) : .device(id)
    }

    public var description: String {
        switch self {
        case let .device(id): return id
        case let .external(id): return Self.externalPrefix + id
        }
    }

    /// Whether `device` is the one named.
    public func names(_ device: BackplaneDevice) -> Bool {
        switch self {
        case let .device(id): return device.deviceID == id
        case let .external(id): return device.externalID == id
        }
    }
}
