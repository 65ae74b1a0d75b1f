import FluentKit
import Foundation
import SQLKit
import SatchelBytes

extension FluentBackplaneStore {
    /// The document that holds the global limits.
    static let limitsDocument = "limits"
    /// The document that holds the settings every device takes.
    static let settingsDocument = "settings"

    /// The row of the device `reference` names.
    static func model(_ reference: DeviceReference, on database: any Database) async throws -> BackplaneDeviceModel {
        let found: BackplaneDeviceModel?
        switch reference {
        case let .device(id): found = try await BackplaneDeviceModel.find(id, on: database)
        case let .external(id): found = try await BackplaneDeviceModel.query(on: database).filter(\.$externalID == id).first()
        }
        guard let found else { throw BackplaneError.unknownDevice(reference.description) }
        return found
    }

    /// A stored document, or nil.
    static func document<Value: Decodable>(_ name: String, as type: Value.Type, on database: any Database) async throws -> Value? {
        let sql = try BackplaneQueries.sqlDatabase(database)  // plain SQL: every sync reads the settings
        guard let row = try await sql.raw("SELECT body FROM \(ident: BackplaneDocumentModel.schema) WHERE name = \(bind: name)").first() else { return nil }
        return try JSONCoding.decoder().decode(type, from: Data(try row.decode(column: "body", as: String.self).utf8))
    }

    /// Stores a document.
    static func putDocument(_ name: String, _ value: some Encodable, on database: any Database) async throws {
        let body = String(decoding: try JSONCoding.encoder().encode(value), as: UTF8.self)
        if let row = try await BackplaneDocumentModel.find(name, on: database) {
            row.body = body
            try await row.save(on: database)
        } else {
            let row = BackplaneDocumentModel()
            row.id = name
            row.body = body
            try await row.create(on: database)
        }
    }

    /// Appends `action` to the device's commands (the user's row is held): numbered after the last, saved with the
    /// device's row.
    @discardableResult
    static func append(_ action: BackplaneCommand.Action, to model: BackplaneDeviceModel, at now: Date, on database: any Database) async throws -> BackplaneCommand {
        let command = BackplaneCommand(id: SecureRandom.uuid().uuidString.lowercased(), sequence: model.nextSequence, issued: now, action: action)
        model.nextSequence += 1
        try await model.save(on: database)
        let row = BackplaneCommandModel()
        row.id = command.id
        row.device = model.id ?? ""
        row.sequence = command.sequence
        row.body = String(decoding: try JSONCoding.encoder().encode(command), as: UTF8.self)
        row.acknowledged = false
        try await row.create(on: database)
        try await BackplaneRowLocks.notify("device:" + row.device, on: database)
        return command
    }

    /// Runs `body` in a transaction (not `atomic`: each statement on its own through a reader, for a read that needs
    /// no common snapshot — no BEGIN and COMMIT round trips, no wait behind SQLite's writer): a ``BackplaneError``
    /// thrown inside comes out as it is, any other failure as `storage`, naming what could not be done.
    func transaction<T: Sendable>(_ what: String, atomic: Bool = true,
                                  _ body: @escaping @Sendable (any Database) async throws -> T) async throws(BackplaneError) -> T {
        do {
            guard atomic else { return try await body(readers?.next() ?? databaseHandle) }
            return try await databaseHandle.transaction { database in try await body(database) }
        } catch let error as BackplaneError {
            throw error
        } catch {
            throw .storage("cannot \(what): \(String(describing: error).prefix(200))")
        }
    }
}
