import FluentKit
import Foundation
import SQLKit
import SatchelBytes

/// The store's reads that answer a device (inside the store's transactions).
enum BackplaneQueries {
    /// A device's sync: the device, its commands not yet acknowledged after `after`, the acknowledged floor, the
    /// settings; an active device's sync recorded; a killed device that has acknowledged its kill refused.
    ///
    /// Separate statements, no transaction (BEGIN and COMMIT were a third of a sync's round trips, and SQLite's
    /// transaction serialized every sync): the device row is read before its commands, so a command issued in
    /// between has a sequence at or past the row's next one and comes with the commands, and the floor is at most
    /// what is acknowledged; a kill issued in between comes with them too.
    static func syncView(device: String, after: Int64, limit: Int, at now: Date, on database: any Database) async throws -> BackplaneSyncAnswer {
        // Every device's every sync comes here: plain SQL, because Fluent's model reading reflects on each model's
        // fields at every row, which was most of a sync's CPU.
        let sql = try sqlDatabase(database)
        guard let row = try await sql.raw("""
            SELECT user_id, external_id, name, platform, download_enabled, state, last_sync, registered_at, next_sequence
            FROM \(ident: BackplaneDeviceModel.schema) WHERE device_id = \(bind: device)
            """).first() else { throw BackplaneError.unknownDevice(DeviceReference.device(device).description) }
        let value = BackplaneDevice(deviceID: device, user: try row.decode(column: "user_id", as: String.self),
                                    externalID: try row.decode(column: "external_id", as: String?.self),
                                    name: try row.decode(column: "name", as: String.self), platform: try row.decode(column: "platform", as: String.self),
                                    downloadEnabled: try row.decode(column: "download_enabled", as: Bool.self),
                                    state: BackplaneDevice.State(rawValue: try row.decode(column: "state", as: String.self)) ?? .active,
                                    lastSync: try row.decode(column: "last_sync", as: Date?.self),
                                    registered: try row.decode(column: "registered_at", as: Date.self))
        let nextSequence = try row.decode(column: "next_sequence", as: Int64.self)
        let unacknowledged = try await sql.raw("""
            SELECT body FROM \(ident: BackplaneCommandModel.schema) WHERE device_id = \(bind: device) AND acknowledged = \(bind: false)
            ORDER BY sequence LIMIT \(bind: max(0, min(limit, 10_000)))
            """).all()
            .map { row throws in try JSONCoding.decoder().decode(BackplaneCommand.self, from: Data(try row.decode(column: "body", as: String.self).utf8)) }
        if value.state == .killed, !unacknowledged.contains(where: { $0.action == .kill }) { throw BackplaneError.deviceKilled(device) }
        if value.state == .active {
            try await sql.raw("UPDATE \(ident: BackplaneDeviceModel.schema) SET last_sync = \(bind: now) WHERE device_id = \(bind: device)").run()
        }
        let settings = try await FluentBackplaneStore.document(FluentBackplaneStore.settingsDocument, as: BackplaneSettings.self, on: database)
            ?? BackplaneSettings()
        return BackplaneSyncAnswer(deviceID: device, downloadEnabled: value.downloadEnabled, state: value.state,
                                   commands: unacknowledged.filter { $0.sequence > after },
                                   acknowledged: (unacknowledged.first?.sequence ?? nextSequence) - 1, settings: settings, serverTime: now)
    }

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

    /// Every user known (with a device, or limits of their own), in order of their names, at most `limit`.
    static func users(limit: Int, on database: any Database) async throws -> [String] {
        let rows = try await sqlDatabase(database).raw("""
            SELECT user_id FROM \(ident: BackplaneUserModel.schema) UNION SELECT user_id FROM \(ident: BackplaneDeviceModel.schema)
            ORDER BY user_id LIMIT \(bind: max(0, min(limit, 100_000)))
            """).all()
        return try rows.map { try $0.decode(column: "user_id", as: String.self) }
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
