/// The backplane's limits ("max number of download-enabled devices per user"; Satchel adds the assets a
/// device may hold and the downloads an account may make). Nil: no limit.
public struct BackplaneLimits: Codable, Sendable, Equatable {
    /// Download-enabled devices per user.
    public var maxDevices: Int?
    /// Downloaded (or downloading) assets per device.
    public var maxAssetsPerDevice: Int?
    /// Downloads per account (every device of the user together).
    public var maxDownloads: Int?
    /// Streams an account plays at once (every device of the user together; the FairPlay Streaming Programming Guide's
    /// concurrent streams).
    public var maxStreams: Int?

    /// No limit at all.
    public static let none = BackplaneLimits()

    /// Limits; nil fields are no limit.
    public init(maxDevices: Int? = nil, maxAssetsPerDevice: Int? = nil, maxDownloads: Int? = nil, maxStreams: Int? = nil) {
        self.maxDevices = maxDevices
        self.maxAssetsPerDevice = maxAssetsPerDevice
        self.maxDownloads = maxDownloads
        self.maxStreams = maxStreams
    }

    /// The limits checked: none negative, none beyond a million.
    public func validated() throws(BackplaneError) -> BackplaneLimits {
        for (name, value) in [("max devices", maxDevices), ("max assets per device", maxAssetsPerDevice), ("max downloads", maxDownloads),
                              ("max streams", maxStreams)] {
            if let value, !(0...1_000_000).contains(value) { throw .badRequest("\(name) must be 0 to 1,000,000") }
        }
        return self
    }

    /// These limits with each field `other` sets put over them (a user's own limits over the global ones).
    public func overridden(by other: BackplaneLimits?) -> BackplaneLimits {
        guard let other else { return self }
        return BackplaneLimits(maxDevices: other.maxDevices ?? maxDevices, maxAssetsPerDevice: other.maxAssetsPerDevice ?? maxAssetsPerDevice,
                               maxDownloads: other.maxDownloads ?? maxDownloads, maxStreams: other.maxStreams ?? maxStreams)
    }
}

/// The global limits and each user's own (a user's limit may be set before the user has any device).
public struct LimitTable: Codable, Sendable, Equatable {
    /// Every user's, unless the user has their own.
    public var global: BackplaneLimits
    /// By user: the fields set here replace the global ones for that user.
    public var perUser: [String: BackplaneLimits]

    /// A table.
    public init(global: BackplaneLimits = .none, perUser: [String: BackplaneLimits] = [:]) {
        self.global = global
        self.perUser = perUser
    }

    /// The limits that hold for `user`.
    public func limits(for user: String) -> BackplaneLimits {
        global.overridden(by: perUser[user])
    }
}

/// One user's own limits: the fields they set replace the global ones.
public struct UserLimits: Codable, Sendable, Equatable {
    /// The user.
    public var user: String
    /// Their own limits.
    public var limits: BackplaneLimits

    /// A user's limits.
    public init(user: String, limits: BackplaneLimits) {
        self.user = user
        self.limits = limits
    }
}

/// A page of the limits: the global ones, and the users with limits of their own, by user ID (keyset: the page's
/// `next` is the following page's `after`).
public struct LimitsPage: Codable, Sendable, Equatable {
    /// Every user's, unless the user has their own.
    public var global: BackplaneLimits
    /// Users with limits of their own, in user ID order.
    public var users: [UserLimits]
    /// The cursor of the next page; nil on the last.
    public var next: String?

    /// A page.
    public init(global: BackplaneLimits, users: [UserLimits], next: String?) {
        self.global = global
        self.users = users
        self.next = next
    }
}

/// The limits that hold for one user (or the global ones): what the operator sees and changes.
public struct LimitsView: Codable, Sendable, Equatable {
    /// The global limits.
    public var global: BackplaneLimits
    /// The user (nil: the global limits alone).
    public var user: String?
    /// The user's own limits (nil: none, or no user).
    public var own: BackplaneLimits?
    /// The limits that hold: the global ones with the user's own in their place.
    public var effective: BackplaneLimits

    /// The view of `user`'s limits (nil: the global ones).
    public init(global: BackplaneLimits, user: String?, own: BackplaneLimits?) {
        self.global = global
        self.user = user
        self.own = own
        effective = global.overridden(by: own)
    }
}

/// The limits listing's name in its cursors.
public let backplaneLimitsListing = "limits"

