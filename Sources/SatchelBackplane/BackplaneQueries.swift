import FluentKit
import Foundation
import SQLKit
import SatchelBytes
import SatchelStorage

/// The store's statements that answer a device, in one place (inside the store's transactions): each reads a bounded
/// number of rows through an index (``hot`` lists them with example binds; a test asks SQLite and PostgreSQL for
/// their plans).
package enum BackplaneQueries {
    /// A device's sync: the device, its commands not yet acknowledged after `after`, the acknowledged floor, the
    /// settings; a killed device that has acknowledged its kill refused. (The store notes an active device's sync
    /// time, ``SyncTimes``.)
    ///
    /// Separate statements, no transaction (BEGIN and COMMIT were a third of a sync's round trips, and SQLite's
    /// transaction serialized every sync): the device row is read before its commands, so a command issued in
    /// between has a sequence at or past the row's next one and comes with the commands, and the floor is at most
    /// what is acknowledged; a kill issued in between comes with them too.
    static func syncView(device: String, after: Int64, limit: Int, at now: Date, on database: any Database) async throws -> BackplaneSyncAnswer {
        // Every device's every sync comes here: plain SQL, because Fluent's model reading reflects on each model's
        // fields at every row, which was most of a sync's CPU.
        let sql = try sqlDatabase(database)
        guard let row = try await sql.raw(Self.device(device)).first() else { throw BackplaneError.unknownDevice(DeviceReference.device(device).description) }
        let value = try Self.device(row, id: device)
        let nextSequence = try row.decode(column: "next_sequence", as: Int64.self)
        let unacknowledged = try await sql.raw(Self.unacknowledged(device: device, limit: limit)).all()
            .map { row throws in try JSONCoding.decoder().decode(BackplaneCommand.self, from: Data(try row.decode(column: "body", as: String.self).utf8)) }
        if value.state == .killed, !unacknowledged.contains(where: { $0.action == .kill }) { throw BackplaneError.deviceKilled(device) }
        let settings = try await FluentBackplaneStore.document(FluentBackplaneStore.settingsDocument, as: BackplaneSettings.self, on: database)
            ?? BackplaneSettings()
        return BackplaneSyncAnswer(deviceID: device, downloadEnabled: value.downloadEnabled, state: value.state,
                                   commands: unacknowledged.filter { $0.sequence > after },
                                   acknowledged: (unacknowledged.first?.sequence ?? nextSequence) - 1, settings: settings, serverTime: now)
    }

    /// A user's own limits (the user's row).
    static func userLimits(_ user: String) -> SQLQueryString {
        "SELECT max_devices, max_assets_per_device, max_downloads, max_streams FROM backplane_users WHERE user_id = \(bind: user)"
    }

    /// A user row with a limit of its own (the condition of the partial index `backplane_users_own_limits`).
    static let hasOwnLimits: SQLQueryString = "max_devices IS NOT NULL OR max_assets_per_device IS NOT NULL OR max_downloads IS NOT NULL OR max_streams IS NOT NULL"

    /// `limit` users with limits of their own after `after` (and from `prefix` on), in order (`backplane_users_own_limits`).
    static func ownLimits(after: String?, prefix: String?, limit: Int) -> SQLQueryString {
        var condition: SQLQueryString = "(\(hasOwnLimits))"
        if let after { condition = condition + " AND user_id > \(bind: after)" }
        if let prefix { condition = condition + " AND user_id >= \(bind: prefix)" }
        return """
            SELECT user_id, max_devices, max_assets_per_device, max_downloads, max_streams FROM backplane_users
            WHERE \(condition) ORDER BY user_id LIMIT \(literal: limit)
            """
    }

    /// How many of the user's active devices may download, `except` one (`backplane_devices_user`).
    static func enabledDevices(user: String, except device: String) -> SQLQueryString {
        """
        SELECT COUNT(*) AS n FROM backplane_devices WHERE user_id = \(bind: user) AND download_enabled = \(bind: true)
        AND state = \(bind: BackplaneDevice.State.active.rawValue) AND device_id <> \(bind: device)
        """
    }

    /// Whether the device holds a grant for the asset (its unique index).
    static func grant(device: String, asset: String) -> SQLQueryString {
        "SELECT COUNT(*) AS n FROM backplane_grants WHERE device_id = \(bind: device) AND asset_id = \(bind: asset)"
    }

    /// The grants a device holds.
    static func grants(device: String) -> SQLQueryString {
        "SELECT COUNT(*) AS n FROM backplane_grants WHERE device_id = \(bind: device)"
    }

    /// The grants a user's devices hold (`backplane_grants_user`).
    static func grants(user: String) -> SQLQueryString {
        "SELECT COUNT(*) AS n FROM backplane_grants WHERE user_id = \(bind: user)"
    }

    /// Frees the user's stream slots whose lease has ended (`backplane_slots_user_expires`).
    static func endedSlots(user: String, at now: Date) -> SQLQueryString {
        "DELETE FROM backplane_slots WHERE user_id = \(bind: user) AND expires_at <= \(bind: now)"
    }

    /// The stream slots a user holds.
    static func slots(user: String) -> SQLQueryString {
        "SELECT COUNT(*) AS n FROM backplane_slots WHERE user_id = \(bind: user)"
    }

    /// A device's row (every sync).
    static func device(_ device: String) -> SQLQueryString {
        """
        SELECT user_id, external_id, name, platform, download_enabled, state, registered_at, next_sequence
        FROM backplane_devices WHERE device_id = \(bind: device)
        """
    }

    /// A device read from a row of `backplane_devices` (the columns of ``device(_:)``).
    static func device(_ row: any SQLRow, id: String) throws -> BackplaneDevice {
        BackplaneDevice(deviceID: id, user: try row.decode(column: "user_id", as: String.self), externalID: try row.decode(column: "external_id", as: String?.self),
                        name: try row.decode(column: "name", as: String.self), platform: try row.decode(column: "platform", as: String.self),
                        downloadEnabled: try row.decode(column: "download_enabled", as: Bool.self),
                        state: BackplaneDevice.State(rawValue: try row.decode(column: "state", as: String.self)) ?? .active,
                        registered: try row.decode(column: "registered_at", as: Date.self))
    }

    /// A page of the devices, or of a user's, by device ID (plain SQL: an operator's page of a thousand rows).
    static func devices(user: String?, page: ListingRequest, on database: any Database) async throws -> ListingPage<BackplaneDevice> {
        var devices = try await sqlDatabase(database).raw(devicePage(user: user, after: page.afterKey?.first, prefix: page.prefix, limit: page.limit + 1))
            .all().map { try device($0, id: try $0.decode(column: "device_id", as: String.self)) }
        if let prefix = page.prefix, let end = devices.firstIndex(where: { !$0.deviceID.hasPrefix(prefix) }) { devices.removeSubrange(end...) }
        return ListingPage(reading: devices, limit: page.limit, listing: BackplaneDevice.listing) { [$0.deviceID] }
    }

    /// The statement of a page of devices: every device's by device ID (the primary key), or a user's
    /// (`backplane_devices_user`).
    static func devicePage(user: String?, after: String?, prefix: String?, limit: Int) -> SQLQueryString {
        var conditions: [SQLQueryString] = []
        if let user { conditions.append("user_id = \(bind: user)") }
        if let after { conditions.append("device_id > \(bind: after)") }
        if let prefix { conditions.append("device_id >= \(bind: prefix)") }
        let condition: SQLQueryString = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return """
            SELECT device_id, user_id, external_id, name, platform, download_enabled, state, registered_at FROM backplane_devices
            \(condition) ORDER BY device_id LIMIT \(literal: limit)
            """
    }

    /// The statement of a page of users, by user ID (the users' primary key).
    static func userPage(after: String?, prefix: String?, limit: Int) -> SQLQueryString {
        var conditions: [SQLQueryString] = []
        if let after { conditions.append("user_id > \(bind: after)") }
        if let prefix { conditions.append("user_id >= \(bind: prefix)") }
        let condition: SQLQueryString = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return "SELECT user_id FROM backplane_users \(condition) ORDER BY user_id LIMIT \(literal: limit)"
    }

    /// The operator's listings, first and later pages, with example cursors: each walks an index from the cursor.
    package static var listings: [HotQuery] {
        [
            HotQuery("devices, first page", devicePage(user: nil, after: nil, prefix: nil, limit: 101)),
            HotQuery("devices, a later page", devicePage(user: nil, after: "device-5000", prefix: nil, limit: 101)),
            HotQuery("users, a later page", userPage(after: "user-500", prefix: nil, limit: 101)),
            HotQuery("users by prefix", userPage(after: nil, prefix: "user-5", limit: 101)),
            HotQuery("users with limits of their own, first page", ownLimits(after: nil, prefix: nil, limit: 101)),
            HotQuery("users with limits of their own, a later page", ownLimits(after: "user-500", prefix: nil, limit: 101)),
        ]
    }

    /// A device's commands not yet acknowledged, in order (`backplane_commands_pending`).
    static func unacknowledged(device: String, limit: Int) -> SQLQueryString {
        """
        SELECT body FROM backplane_commands WHERE device_id = \(bind: device) AND acknowledged = \(bind: false)
        ORDER BY sequence LIMIT \(bind: max(0, min(limit, 10_000)))
        """
    }

    /// Records devices' syncs (``SyncTimes``) in ``SyncTimesTable``, one row each through the key: a device's time is
    /// kept only when later than the one written (another node's, or an earlier write that came last).
    static func recordSyncs(_ times: some Collection<(key: String, value: Date)>) -> SQLQueryString {
        let rows: [SQLQueryString] = times.map { "(\(bind: $0.key), \(bind: $0.value))" }
        return """
            INSERT INTO backplane_device_syncs (device_id, last_sync) VALUES \(rows.joined(separator: ", "))
            ON CONFLICT (device_id) DO UPDATE SET last_sync = excluded.last_sync WHERE backplane_device_syncs.last_sync < excluded.last_sync
            """
    }

    /// The last syncs written of `devices` (at most a page's), through ``SyncTimesTable``'s key.
    static func syncTimes(of devices: some Collection<String>) -> SQLQueryString {
        let ids: [SQLQueryString] = devices.map { "\(bind: $0)" }
        return "SELECT device_id, last_sync FROM backplane_device_syncs WHERE device_id IN (\(ids.joined(separator: ", ")))"
    }

    /// Forgets a device's sync time (the device is forgotten).
    static func forgetSync(device: String) -> SQLQueryString {
        "DELETE FROM backplane_device_syncs WHERE device_id = \(bind: device)"
    }

    /// The one number a counting query of this file answers.
    static func count(_ query: SQLQueryString, on database: any Database) async throws -> Int {
        try await sqlDatabase(database).raw(query).first()?.decode(column: "n", as: Int.self) ?? 0
    }

    /// The hot statements with example binds.
    package static var hot: [HotQuery] {
        [
            HotQuery("a user's limits", userLimits("user-1")),
            HotQuery("a user's download-enabled devices", enabledDevices(user: "user-1", except: "device-1")),
            HotQuery("a device's grant of an asset", grant(device: "device-1", asset: "asset-1")),
            HotQuery("a device's grants", grants(device: "device-1")),
            HotQuery("a user's grants", grants(user: "user-1")),
            HotQuery("a user's ended stream slots freed", endedSlots(user: "user-1", at: Date())),
            HotQuery("a user's stream slots", slots(user: "user-1")),
            HotQuery("a device", device("device-1")),
            HotQuery("a device's pending commands", unacknowledged(device: "device-1", limit: 100)),
            HotQuery("devices' syncs recorded", recordSyncs(["device-1": Date(), "device-2": Date()])),
            HotQuery("a page of devices' syncs", syncTimes(of: ["device-1", "device-2"])),
            // A user's devices are few: sorted after an index read of them, they are bounded by the user, not the table.
            HotQuery("a user's devices, a later page", devicePage(user: "user-7", after: "device-20", prefix: nil, limit: 101)),
        ]
    }

    /// The backplane's tables that grow with the audience or the history.
    package static let growingTables: Set<String> = [
        "backplane_users", "backplane_devices", "backplane_grants", "backplane_commands", "backplane_slots", "backplane_events",
        "backplane_feed_items", "backplane_subscriptions",
    ]

    /// `database` as the SQL database both of the backplane's stores (SQLite, PostgreSQL) are.
    static func sqlDatabase(_ database: any Database) throws -> any SQLDatabase {
        guard let sql = database as? any SQLDatabase else { throw BackplaneError.storage("the backplane needs an SQL database") }
        return sql
    }

    /// The sequence every command up to which is acknowledged.
    static func acknowledgedThrough(device: String, on database: any Database) async throws -> Int64 {
        let model = try await FluentBackplaneStore.model(.device(device), on: database)
        let first = try await BackplaneCommandModel.query(on: database).filter(\.$device == device).filter(\.$acknowledged == false)
            .sort(\.$sequence).first()
        return (first?.sequence ?? model.nextSequence) - 1
    }

    /// A page of the users known (every user with a device has a row: registration takes it), by user ID.
    static func users(_ page: ListingRequest, on database: any Database) async throws -> ListingPage<String> {
        var users = try await sqlDatabase(database).raw(userPage(after: page.afterKey?.first, prefix: page.prefix, limit: page.limit + 1))
            .all().map { try $0.decode(column: "user_id", as: String.self) }
        if let prefix = page.prefix, let end = users.firstIndex(where: { !$0.hasPrefix(prefix) }) { users.removeSubrange(end...) }
        return ListingPage(reading: users, limit: page.limit, listing: backplaneUsersListing) { [$0] }
    }

    /// Records the device's grant of `asset` (the user's row is held by the caller).
    static func grant(_ asset: String, to device: String, of user: String, on database: any Database) async throws {
        let grant = BackplaneGrantModel()
        grant.id = SecureRandom.uuid().uuidString.lowercased()
        grant.device = device
        grant.user = user
        grant.asset = asset
        grant.granted = Date()
        try await grant.create(on: database)
    }

    /// Forgets a device (the user's row is held by the caller): its grants, commands and stream slots go with it, so
    /// its place under the user's limits is free; a killed device stays on record (it stays refused).
    static func delete(_ model: BackplaneDeviceModel, on database: any Database) async throws -> BackplaneDevice {
        guard model.state == BackplaneDevice.State.active.rawValue, let device = model.id else {
            throw BackplaneError.deviceKilled(model.id ?? "")
        }
        try await BackplaneGrantModel.query(on: database).filter(\.$device == device).delete()
        try await BackplaneCommandModel.query(on: database).filter(\.$device == device).delete()
        try await BackplaneSlotModel.query(on: database).filter(\.$device == device).delete()
        try await BackplaneSubscriptionModel.query(on: database).filter(\.$device == device).delete()
        let value = model.value
        try await model.delete(on: database)
        return value
    }
}
