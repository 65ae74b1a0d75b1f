import FluentKit
import Foundation
import SQLKit
import SatchelBytes
import SatchelRights
import SatchelStorage

/// The operator's reads of the device registry: pages of devices and of device licenses (newest first, by their
/// time-ordered IDs), each device's licenses counted, estimated totals and licenses issued per hour (the roll-ups) —
/// never a whole table. `DeviceRegistry.listings`.
public struct DeviceListings: Sendable, DeviceRowReading {
    let database: any Database

    /// About how many devices are registered, how many of them are disabled (counted through their index: few are)
    /// and how many licenses were issued to devices; never a count of a large table.
    public func estimatedCounts() async throws(LicensingError) -> (devices: Int, disabled: Int, licenses: Int) {
        let sql = try sqlDatabase()
        return try await stored("count the devices") {
            let disabled = try await sql.raw("SELECT COUNT(*) AS n FROM satchel_devices WHERE disabled = \(bind: true)").first()?.decode(column: "n", as: Int.self) ?? 0
            return (try await TableSize.estimate(DeviceModel.schema, on: sql), disabled, try await TableSize.estimate(DeviceLicenseModel.schema, on: sql))
        }
    }

    /// Device licenses issued per hour of `hours`, persistent (offline) and streaming, from the roll-ups.
    public func issuedPerHour(hours: [Date]) async throws(LicensingError) -> (persistent: [Int], streaming: [Int]) {
        let sql = try sqlDatabase()
        let counts = try await stored("read the hourly counts") {
            try await Rollups.counts(["device-license:persistent", "device-license:streaming"], hours: hours, on: sql)
        }
        let none = Array(repeating: 0, count: hours.count)
        return (counts["device-license:persistent"] ?? none, counts["device-license:streaming"] ?? none)
    }

    /// Registered devices, newest first.
    public func devices(limit: Int = 1000) async throws(LicensingError) -> [DeviceRecord] {
        let models = try await stored("read devices") { try await DeviceModel.query(on: database).sort(\.$registeredAt, .descending).limit(max(limit, 0)).all() }
        var records: [DeviceRecord] = []
        for model in models { records.append(try record(model)) }
        return records
    }

    /// A page of the devices, by device ID (time-ordered IDs: the order of registration), newest first.
    public func devices(_ page: ListingRequest) async throws(LicensingError) -> ListingPage<DeviceRecord> {
        let after = page.afterKey?.first
        let models = try await stored("read devices") { () async throws -> [DeviceModel] in
            var query = DeviceModel.query(on: database)
            if let after { query = query.filter(\.$id < after) }
            return try await query.sort(\.$id, .descending).limit(page.limit + 1).all()
        }
        var records: [DeviceRecord] = []
        for model in models { records.append(try record(model)) }
        return ListingPage(reading: records, limit: page.limit, listing: DeviceRecord.listing) { [$0.deviceID] }
    }

    /// A page of the device licenses, by license ID (time-ordered IDs: the order of issue), newest first.
    public func licenses(_ page: ListingRequest) async throws(LicensingError) -> ListingPage<DeviceLicenseRecord> {
        let sql = try sqlDatabase()
        let condition: SQLQueryString = page.afterKey.map { "WHERE license_id < \(bind: $0[0])" } ?? ""
        let rows = try await stored("read licenses") {
            try await sql.raw("""
                SELECT \(LicensingQueries.licenseColumns) FROM satchel_device_licenses \(condition) ORDER BY license_id DESC LIMIT \(literal: page.limit + 1)
                """).all()
        }
        var records: [DeviceLicenseRecord] = []
        for row in rows { records.append(try record(row)) }
        return ListingPage(reading: records, limit: page.limit, listing: DeviceLicenseRecord.listing) { [$0.licenseID] }
    }

    /// For each of `devices`, its licenses: issued, not released, persistent (one grouped read of their rows by device).
    public func licenseCounts(devices: [String]) async throws(LicensingError) -> [String: (issued: Int, active: Int, offline: Int)] {
        guard !devices.isEmpty else { return [:] }
        let sql = try sqlDatabase()
        let rows = try await stored("count licenses") {
            try await sql.raw("""
                SELECT device_id, state, persistent, COUNT(*) AS n FROM satchel_device_licenses WHERE device_id IN (\(binds: devices.map { $0 as any Encodable & Sendable }))
                GROUP BY device_id, state, persistent
                """).all()
        }
        var counts: [String: (issued: Int, active: Int, offline: Int)] = [:]
        for row in rows {
            let fields = try await stored("count licenses") { () throws -> (String, String, Bool, Int) in
                (try row.decode(column: "device_id", as: String.self), try row.decode(column: "state", as: String.self),
                 try row.decode(column: "persistent", as: Bool.self), try row.decode(column: "n", as: Int.self))
            }
            var entry = counts[fields.0] ?? (0, 0, 0)
            entry.issued += fields.3
            if fields.1 != DeviceLicenseState.released.rawValue { entry.active += fields.3 }
            if fields.2 { entry.offline += fields.3 }
            counts[fields.0] = entry
        }
        return counts
    }

    /// Every device license, newest first.
    public func licenses(limit: Int = 1000) async throws(LicensingError) -> [DeviceLicenseRecord] {
        let models = try await stored("read licenses") { try await DeviceLicenseModel.query(on: database).sort(\.$issuedAt, .descending).limit(limit).all() }
        var records: [DeviceLicenseRecord] = []
        for model in models { records.append(try record(model)) }
        return records
    }
}
