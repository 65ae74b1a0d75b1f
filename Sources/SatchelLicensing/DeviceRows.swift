import FluentKit
import Foundation
import SQLKit
import SatchelBytes
import SatchelRights
import SatchelStorage

/// The registry's rows read into values (devices, device licenses), and its database work with errors that name it:
/// shared by ``DeviceRegistry`` and ``DeviceListings``.
enum DeviceRows {
    @discardableResult
    static func stored<T>(_ what: String, _ body: () async throws -> T) async throws(LicensingError) -> T {
        do {
            return try await body()
        } catch {
            throw .storage("cannot \(what): \(String(describing: error).prefix(200))")
        }
    }

    static func record(_ model: DeviceModel) throws(LicensingError) -> DeviceRecord {
        guard let key = RightsJSON.value(PublicKeyJWK.self, from: model.publicKey) else {
            throw .storage("a stored device key cannot be read")
        }
        return DeviceRecord(deviceID: model.id ?? "", subject: model.subject, publicKey: key, name: model.name, externalID: model.externalID,
                            registeredAt: model.registeredAt, disabled: model.disabled ?? false)
    }

    static func record(_ row: any SQLRow) throws(LicensingError) -> DeviceLicenseRecord {
        do {
            guard let rights = RightsJSON.value(Rights.self, from: try row.decode(column: "rights", as: String.self)),
                  let state = DeviceLicenseState(rawValue: try row.decode(column: "state", as: String.self)) else {
                throw LicensingError.storage("a stored license cannot be read")
            }
            return DeviceLicenseRecord(licenseID: try row.decode(column: "license_id", as: String.self), deviceID: try row.decode(column: "device_id", as: String.self),
                                       subject: try row.decode(column: "subject", as: String.self), assetID: try row.decode(column: "asset_id", as: String.self),
                                       persistent: try row.decode(column: "persistent", as: Bool.self), state: state, rights: rights,
                                       issuedAt: try row.decode(column: "issued_at", as: Date.self), renewedAt: try row.decode(column: "renewed_at", as: Date?.self),
                                       releasedAt: try row.decode(column: "released_at", as: Date?.self), customData: try row.decode(column: "custom_data", as: String?.self))
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("a stored license cannot be read")
        }
    }

    static func record(_ model: DeviceLicenseModel) throws(LicensingError) -> DeviceLicenseRecord {
        guard let rights = RightsJSON.value(Rights.self, from: model.rights),
              let state = DeviceLicenseState(rawValue: model.state) else {
            throw .storage("a stored license cannot be read")
        }
        return DeviceLicenseRecord(licenseID: model.id ?? "", deviceID: model.deviceID, subject: model.subject, assetID: model.assetID,
                                   persistent: model.persistent, state: state, rights: rights, issuedAt: model.issuedAt,
                                   renewedAt: model.renewedAt, releasedAt: model.releasedAt, customData: model.customData)
    }

    /// The database as SQL (SQLite and PostgreSQL both are).
    static func sqlDatabase(_ database: any Database) throws(LicensingError) -> any SQLDatabase {
        guard let sql = database as? any SQLDatabase else { throw .storage("devices need an SQL database") }
        return sql
    }
}

/// A reader of the registry's rows (the registry and its listings), with ``DeviceRows``' decoding and error wording.
protocol DeviceRowReading {
    var database: any Database { get }
}

extension DeviceRowReading {
    /// Runs database work: a failure becomes `storage`, naming what could not be done.
    @discardableResult
    func stored<T>(_ what: String, _ body: () async throws -> T) async throws(LicensingError) -> T { try await DeviceRows.stored(what, body) }
    func record(_ model: DeviceModel) throws(LicensingError) -> DeviceRecord { try DeviceRows.record(model) }
    func record(_ row: any SQLRow) throws(LicensingError) -> DeviceLicenseRecord { try DeviceRows.record(row) }
    func record(_ model: DeviceLicenseModel) throws(LicensingError) -> DeviceLicenseRecord { try DeviceRows.record(model) }
    func sqlDatabase() throws(LicensingError) -> any SQLDatabase { try DeviceRows.sqlDatabase(database) }
}
