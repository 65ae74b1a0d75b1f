import FluentKit
import FluentSQLiteDriver
import Foundation
import Logging
import SatchelRights
import SatchelStorage

/// A license as the device keeps it.
public struct StoredLicense: Sendable, Equatable {
    /// The license ID.
    public var licenseID: String
    /// The asset.
    public var assetID: String
    /// The signed license (content keys sealed to this device's key).
    public var license: String
    /// The license server it came from.
    public var server: String
    /// When it was issued or last renewed (server time).
    public var acquired: Date
    /// When playback first started.
    public var firstUse: Date?
    /// Kept for offline playback.
    public var persistent: Bool
    /// The rights.
    public var rights: Rights
    /// The key IDs, hex.
    public var keyIDs: [String]

    /// The usage the rights are evaluated with.
    public var usage: RightsUsage { RightsUsage(acquired: acquired, firstUse: firstUse) }
}

/// A release owed to a license server.
public struct OwedRelease: Sendable, Equatable {
    /// The license.
    public var licenseID: String
    /// Its asset.
    public var assetID: String
    /// The server to tell.
    public var server: String
    /// Since when.
    public var owedSince: Date
    /// Delivery attempts so far.
    public var attempts: Int
}

/// The agent's SQLite store (`agent.sqlite` in the data directory): licenses, owed releases, the secure clock.
/// Content keys stay sealed to the device key inside the signed licenses: the file holds no usable key.
public final class LicenseStore: Sendable {
    private let databases: Databases
    private let database: any Database

    /// Opens (and migrates) the store in `dataDirectory`.
    public init(dataDirectory: String, logger: Logger = Logger(label: "satchel.agent")) async throws(AgentError) {
        let path = (dataDirectory as NSString).appendingPathComponent("agent.sqlite")
        do {
            try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
            // Fluent logs every query's values at debug: licenses (JWS) have no place in a log, so the store logs from info up.
            var quiet = logger
            if quiet.logLevel < .info { quiet.logLevel = .info }
            let store = try await FluentStore.open(.sqlite(.file(path)), as: .sqlite, migrations: [CreateAgentSchema()], logger: quiet)
            databases = store.databases
            database = store.database
        } catch {
            throw .storage("cannot open or migrate \(path): \(error)")
        }
    }

    /// Closes the store.
    public func close() async {
        await databases.shutdownAsync()
    }

    /// Stores a license (replacing one with the same ID).
    public func save(_ license: StoredLicense) async throws(AgentError) {
        let rights = try Self.json(license.rights)
        try await run("save a license") { db in
            let model = try await AgentLicenseModel.find(license.licenseID, on: db) ?? AgentLicenseModel()
            model.id = license.licenseID
            model.assetID = license.assetID
            model.license = license.license
            model.server = license.server
            model.acquiredAt = license.acquired
            model.firstUse = license.firstUse
            model.persistent = license.persistent
            model.rights = rights
            model.keyIDs = license.keyIDs.joined(separator: ",")
            try await model.save(on: db)
        }
    }

    /// Every stored license, by asset.
    public func licenses() async throws(AgentError) -> [StoredLicense] {
        let models = try await run("read licenses") { db in try await AgentLicenseModel.query(on: db).sort(\.$assetID).all() }
        var answer: [StoredLicense] = []
        for model in models { answer.append(try Self.license(model)) }
        return answer
    }

    /// The newest license of an asset.
    public func license(asset: String) async throws(AgentError) -> StoredLicense? {
        try await licenses().filter { $0.assetID == asset }.max { $0.acquired < $1.acquired }
    }

    /// Deletes a license (its keys with it).
    public func delete(_ licenseID: String) async throws(AgentError) {
        try await run("delete a license") { db in try await AgentLicenseModel.query(on: db).filter(\.$id == licenseID).delete() }
    }

    /// Deletes the license and records the release owed for it, in one transaction.
    public func deleteOwingRelease(_ license: StoredLicense, at now: Date) async throws(AgentError) {
        try await run("record a release") { db in
            try await db.transaction { db in
                try await AgentLicenseModel.query(on: db).filter(\.$id == license.licenseID).delete()
                guard try await AgentReleaseModel.find(license.licenseID, on: db) == nil else { return }
                let owed = AgentReleaseModel()
                owed.id = license.licenseID
                owed.assetID = license.assetID
                owed.server = license.server
                owed.owedSince = now
                owed.attempts = 0
                try await owed.create(on: db)
            }
        }
    }

    /// Releases not yet delivered.
    public func owedReleases() async throws(AgentError) -> [OwedRelease] {
        try await run("read releases") { db in
            try await AgentReleaseModel.query(on: db).sort(\.$owedSince).all().map {
                OwedRelease(licenseID: $0.id ?? "", assetID: $0.assetID, server: $0.server, owedSince: $0.owedSince, attempts: $0.attempts)
            }
        }
    }

    /// Marks a release delivered (removed) or counts a failed attempt.
    public func settleRelease(_ licenseID: String, delivered: Bool) async throws(AgentError) {
        try await run("update a release") { db in
            guard let model = try await AgentReleaseModel.find(licenseID, on: db) else { return }
            if delivered {
                try await model.delete(on: db)
            } else {
                model.attempts += 1
                try await model.save(on: db)
            }
        }
    }

    /// The persisted secure clock (a fresh one the first time).
    public func secureClock() async throws(AgentError) -> SecureClock {
        let text = try await run("read the clock") { db in try await AgentStateModel.find("secure-clock", on: db)?.value }
        guard let text else { return SecureClock() }
        guard let clock = RightsJSON.value(SecureClock.self, from: text) else {
            return SecureClock(untrusted: true)  // a damaged clock record is not a reason to trust
        }
        return clock
    }

    /// Persists the secure clock.
    public func saveSecureClock(_ clock: SecureClock) async throws(AgentError) {
        let text = try Self.json(clock)
        try await run("save the clock") { db in
            let model = try await AgentStateModel.find("secure-clock", on: db) ?? AgentStateModel()
            model.id = "secure-clock"
            model.value = text
            try await model.save(on: db)
        }
    }

    private func run<T: Sendable>(_ what: String, _ body: @Sendable (any Database) async throws -> T) async throws(AgentError) -> T {
        do {
            return try await body(database)
        } catch {
            throw .storage("cannot \(what): \(String(describing: error).prefix(200))")
        }
    }

    private static func license(_ model: AgentLicenseModel) throws(AgentError) -> StoredLicense {
        guard let rights = RightsJSON.value(Rights.self, from: model.rights) else { throw .storage("a stored license cannot be read") }
        return StoredLicense(licenseID: model.id ?? "", assetID: model.assetID, license: model.license, server: model.server,
                             acquired: model.acquiredAt, firstUse: model.firstUse, persistent: model.persistent, rights: rights,
                             keyIDs: model.keyIDs.split(separator: ",").map(String.init))
    }

    static func json(_ value: some Encodable) throws(AgentError) -> String {
        guard let text = RightsJSON.text(value) else { throw .storage("a value cannot be encoded") }
        return text
    }
}
