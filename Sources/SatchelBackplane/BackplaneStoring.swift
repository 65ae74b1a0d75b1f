import Foundation
import SatchelBytes

/// Where the backplane keeps users, devices, grants and commands: the seam between the rules and a database
/// (``FluentBackplaneStore`` on SQLite for one node, PostgreSQL for several). Every limit holds in the store itself,
/// whatever the interleaving of requests across nodes.
public protocol BackplaneStoring: Sendable {
    /// Registers `device` for its user (or updates the name, platform and external ID of a device registered
    /// already): a new device's toggle follows `BackplaneRules/enrollment(enabledDevices:limits:)`.
    func register(_ device: BackplaneDevice) async throws(BackplaneError) -> BackplaneRegistration
    /// The device `reference` names.
    func device(_ reference: DeviceReference) async throws(BackplaneError) -> BackplaneDevice
    /// A page of every device, or of a user's, by device ID (a prefix of the page request: device IDs that start with it).
    func devices(user: String?, page: ListingRequest) async throws(BackplaneError) -> ListingPage<BackplaneDevice>
    /// Forgets an active device (its grants, commands and stream slots too), freeing its place under the user's
    /// limits; it is enrolled anew if it calls again. A killed device is refused (`deviceKilled`): it stays on record.
    func delete(_ reference: DeviceReference) async throws(BackplaneError) -> BackplaneDevice
    /// Turns a device's downloading on (only within its user's limit) or off; the device is told by a command.
    func setDownloadEnabled(_ reference: DeviceReference, _ wanted: Bool, at now: Date) async throws(BackplaneError) -> BackplaneDevice
    /// A page of the users known (with a device or limits of their own), by user ID.
    func users(_ page: ListingRequest) async throws(BackplaneError) -> ListingPage<String>
    /// Sets the global limits (`user` nil) or a user's own.
    func setLimits(_ limits: BackplaneLimits, user: String?) async throws(BackplaneError)
    /// The global limits and a page of the users with limits of their own, by user ID (a partial index of those users).
    func limits(_ page: ListingRequest) async throws(BackplaneError) -> LimitsPage
    /// The global limits and `user`'s own (nil when the user has none): one row, whatever the number of users.
    func limits(of user: String) async throws(BackplaneError) -> (global: BackplaneLimits, own: BackplaneLimits?)
    /// Whether the device may download `asset` (a grant is recorded when it may).
    func permission(device: String, asset: String, downloadable: Bool) async throws(BackplaneError) -> DownloadPermission
    /// Gives back the device's grant for `asset` (the device deleted it): its asset and download counts go down.
    func release(device: String, asset: String) async throws(BackplaneError)
    /// Issues `action` to the device `reference` names: numbered after its last command; a wipe or a delete drops
    /// the grants it covers, a kill also disables the device and refuses it from then on.
    func issue(_ action: BackplaneCommand.Action, to reference: DeviceReference, at now: Date) async throws(BackplaneError) -> BackplaneCommand
    /// The device's commands not yet acknowledged with a sequence above `after`, in order (at most `limit`).
    func pending(device: String, after: Int64, limit: Int) async throws(BackplaneError) -> [BackplaneCommand]
    /// The sequence every command up to which is acknowledged (0: none issued, or the first not acknowledged yet): a
    /// device whose own record of what it applied was lost takes up from there.
    func acknowledgedThrough(device: String) async throws(BackplaneError) -> Int64
    /// Marks a command as acknowledged (delivered and applied); acknowledging again changes nothing.
    func acknowledge(device: String, command: String) async throws(BackplaneError)
    /// A device's sync: the device, its commands not yet acknowledged after `after` (at most
    /// `limit`), the sequence every command up to which is acknowledged, the settings; an active device's sync is
    /// recorded at `now` (a store may write it a moment later; its reads of the device show it meanwhile). A killed
    /// device is refused (`deviceKilled`) once it has acknowledged its kill.
    func syncView(device: String, after: Int64, limit: Int, at now: Date) async throws(BackplaneError) -> BackplaneSyncAnswer
    /// Records that the device synced at `now`, at once (a later time already recorded is kept).
    func synced(device: String, at now: Date) async throws(BackplaneError)
    /// The settings every device takes (the global EAP/EAD defaults, and download rules).
    func settings() async throws(BackplaneError) -> BackplaneSettings
    /// Puts the fields `newer` sets over the settings, and answers the settings now in force.
    func updateSettings(_ newer: BackplaneSettings) async throws(BackplaneError) -> BackplaneSettings
}

/// A registration's outcome: the device as stored, and the notice for it (device limit reached, already registered).
public struct BackplaneRegistration: Sendable, Equatable {
    /// The device.
    public var device: BackplaneDevice
    /// The notice, when there is one.
    public var notice: BackplaneNotice?
}

extension BackplaneDevice {
    /// The devices listing's name in its cursors.
    public static let listing = "devices"
}

/// The users listing's name in its cursors.
public let backplaneUsersListing = "users"
