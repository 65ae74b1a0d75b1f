import FluentKit
import Foundation
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

    /// The global limits and those of the users that have their own (at most ``ownLimitsListed`` users).
    static func limitTable(on database: any Database) async throws -> LimitTable {
        let global = try await FluentBackplaneStore.document(FluentBackplaneStore.limitsDocument, as: BackplaneLimits.self, on: database) ?? .none
        var perUser: [String: BackplaneLimits] = [:]
        for row in try await BackplaneQueries.sqlDatabase(database).raw(BackplaneQueries.ownLimits(limit: ownLimitsListed)).all() {
            perUser[try row.decode(column: "user_id", as: String.self)] = BackplaneLimits(
                maxDevices: try row.decode(column: "max_devices", as: Int?.self), maxAssetsPerDevice: try row.decode(column: "max_assets_per_device", as: Int?.self),
                maxDownloads: try row.decode(column: "max_downloads", as: Int?.self), maxStreams: try row.decode(column: "max_streams", as: Int?.self))
        }
        return LimitTable(global: global, perUser: perUser)
    }

    /// The most users with limits of their own that the operator's limits table lists.
    static let ownLimitsListed = 10_000

    /// The limits that hold for `user`.
    static func effectiveLimits(of user: String, on database: any Database) async throws -> BackplaneLimits {
        let (global, own) = try await limits(of: user, on: database)
        return global.overridden(by: own)
    }
}
