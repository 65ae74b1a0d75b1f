import FluentKit
import Foundation
import SatchelBytes
import SQLKit

/// The limits as the backplane's store keeps them: the global document and each user's own row. A request reads the
/// one user's row (never every user's); the operator's table lists the users that have limits of their own.
enum BackplaneLimitRows {
    /// The global limits and a user's own (nil when the user has none): the limits document and the user's row, never
    /// every user's.
    static func limits(of user: String, on database: any Database) async throws -> (global: BackplaneLimits, own: BackplaneLimits?) {
        let global = try await FluentBackplaneStore.document(FluentBackplaneStore.limitsDocument, as: BackplaneLimits.self, on: database) ?? .none
        guard let row = try await BackplaneQueries.sqlDatabase(database).raw(BackplaneQueries.userLimits(user)).first() else { return (global, nil) }
        let own = BackplaneLimits(maxDevices: try row.decode(column: "max_devices", as: Int?.self),
                                  maxAssetsPerDevice: try row.decode(column: "max_assets_per_device", as: Int?.self),
                                  maxDownloads: try row.decode(column: "max_downloads", as: Int?.self), maxStreams: try row.decode(column: "max_streams", as: Int?.self))
        return (global, own == .none ? nil : own)
    }

    /// The global limits and a page of the users that have their own, by user ID (`backplane_users_own_limits`).
    static func limitsPage(_ page: ListingRequest, on database: any Database) async throws -> LimitsPage {
        let global = try await FluentBackplaneStore.document(FluentBackplaneStore.limitsDocument, as: BackplaneLimits.self, on: database) ?? .none
        var users: [UserLimits] = []
        let query = BackplaneQueries.ownLimits(after: page.afterKey?.first, prefix: page.prefix, limit: page.limit + 1)
        for row in try await BackplaneQueries.sqlDatabase(database).raw(query).all() {
            users.append(UserLimits(user: try row.decode(column: "user_id", as: String.self), limits: BackplaneLimits(
                maxDevices: try row.decode(column: "max_devices", as: Int?.self), maxAssetsPerDevice: try row.decode(column: "max_assets_per_device", as: Int?.self),
                maxDownloads: try row.decode(column: "max_downloads", as: Int?.self), maxStreams: try row.decode(column: "max_streams", as: Int?.self))))
        }
        if let prefix = page.prefix, let end = users.firstIndex(where: { !$0.user.hasPrefix(prefix) }) { users.removeSubrange(end...) }
        let listed = ListingPage(reading: users, limit: page.limit, listing: backplaneLimitsListing) { [$0.user] }
        return LimitsPage(global: global, users: listed.items, next: listed.next)
    }

    /// The limits that hold for `user`.
    static func effectiveLimits(of user: String, on database: any Database) async throws -> BackplaneLimits {
        let (global, own) = try await limits(of: user, on: database)
        return global.overridden(by: own)
    }
}
