import FluentKit
import SQLKit

/// The indexes the backplane's requests read through at an operator's size: devices by user, grants by user, a
/// device's pending commands in order, events by device, a feed's subscribers, and the operator's listings in order.
public struct IndexBackplaneForScale: AsyncMigration {
    static let indexes: [(name: String, table: String, columns: [String])] = [
        ("backplane_devices_user", "backplane_devices", ["user_id", "device_id"]),
        ("backplane_grants_user", "backplane_grants", ["user_id"]),
        ("backplane_commands_pending", "backplane_commands", ["device_id", "acknowledged", "sequence"]),
        ("backplane_events_received", "backplane_events", ["ordinal", "record_id"]),
        ("backplane_events_device_received", "backplane_events", ["device_id", "ordinal"]),
        ("backplane_events_user_received", "backplane_events", ["user_id", "ordinal"]),
        ("backplane_subscriptions_feed", "backplane_subscriptions", ["feed_id", "device_id"]),
    ]

    /// The migration.
    public init() {}

    public func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        for index in Self.indexes {
            var create = sql.create(index: index.name).on(index.table)
            for column in index.columns { create = create.column(column) }
            try await create.run()
        }
        // The users listing reads the users' rows alone: a user with devices from before every registration took a row gets one.
        try await sql.raw("INSERT INTO backplane_users (user_id) SELECT DISTINCT user_id FROM backplane_devices WHERE true ON CONFLICT (user_id) DO NOTHING").run()
    }

    public func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        for index in Self.indexes { try await sql.drop(index: index.name).run() }
    }
}

/// The users with limits of their own, in order (a partial index: the operator's limits table reads them alone, not
/// every user's row).
struct IndexOwnLimits: AsyncMigration {
    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.raw("CREATE INDEX IF NOT EXISTS backplane_users_own_limits ON backplane_users (user_id) WHERE \(BackplaneQueries.hasOwnLimits)").run()
    }

    func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.drop(index: "backplane_users_own_limits").run()
    }
}

/// Room in each page of the devices' rows for their next version (PostgreSQL's `fillfactor`; SQLite writes a row in
/// place): a device's row is written again at its syncs (its last sync), and a new version that fits in its page
/// changes none of the table's indexes (a heap-only update), however many devices there are.
struct RoomForSyncTimes: AsyncMigration {
    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase, sql.dialect.name == "postgresql" else { return }
        try await sql.raw("ALTER TABLE backplane_devices SET (fillfactor = 85)").run()
    }

    func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase, sql.dialect.name == "postgresql" else { return }
        try await sql.raw("ALTER TABLE backplane_devices RESET (fillfactor)").run()
    }
}
