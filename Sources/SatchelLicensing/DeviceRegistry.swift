import Crypto
import FluentKit
import Foundation
import SQLKit
import SatchelBytes
import SatchelRights
import SatchelStorage
import SatchelSystem

/// A registered device as the server knows it.
public struct DeviceRecord: Sendable, Codable, Equatable {
    /// The device ID.
    public var deviceID: String
    /// The user it belongs to.
    public var subject: String
    /// Its public key.
    public var publicKey: PublicKeyJWK
    /// Its name, if given.
    public var name: String?
    /// The application's own device ID, if given.
    public var externalID: String?
    /// When it registered.
    public var registeredAt: Date
    /// Disabled by the operator: no new license or renewal.
    public var disabled: Bool = false
}

/// A device license as the server records it (no key material).
public struct DeviceLicenseRecord: Sendable, Codable, Equatable {
    /// The license ID.
    public var licenseID: String
    /// The device.
    public var deviceID: String
    /// The user.
    public var subject: String
    /// The asset.
    public var assetID: String
    /// Persistent (offline) or not.
    public var persistent: Bool
    /// Active, renewed or released.
    public var state: DeviceLicenseState
    /// The rights last granted.
    public var rights: Rights
    /// When it was issued.
    public var issuedAt: Date
    /// When it was last renewed.
    public var renewedAt: Date?
    /// When it was released.
    public var releasedAt: Date?
    /// The custom data the acquisition request carried, nil when none.
    public var customData: String?
}

/// Devices, the licenses issued to them, and the server's signing key, in the licensing database.
public struct DeviceRegistry: Sendable, DeviceRowReading {
    let database: any Database
    private let kek: KeyEncryptionKey
    /// The signing keys: the newest signs, every one verifies.
    let keyring: SigningKeyring
    /// When this process last forgot old nonces.
    private let pruned = Locked(Date.distantPast)

    /// A registry over `database`; the signing key is sealed with `kek`.
    public init(database: any Database, kek: KeyEncryptionKey) {
        self.database = database
        self.kek = kek
        keyring = SigningKeyring(database: database, kek: kek)
    }

    /// The key licenses, certificates and times are signed with (the newest of its keyring): made on first use.
    public func signingKey() async throws(LicensingError) -> (kid: String, key: P256.Signing.PrivateKey) {
        try await keyring.keys().signer
    }

    /// Makes a new signing key, introduced by the current one (`KeyRotationClaims`); answers its ID. Every node signs
    /// with it within a minute; a device learns it through the introduction when it first meets it. What the older keys
    /// signed (certificates, licenses) stays good.
    public func rotateSigningKey(at now: Date = Date()) async throws(LicensingError) -> String {
        try await keyring.rotate(at: now)
    }

    /// Registers a device key for a user: the same key registered again by the same user keeps its device ID.
    public func register(_ key: PublicKeyJWK, subject: String, name: String?, externalID: String?, at now: Date) async throws(LicensingError) -> DeviceRecord {
        let fingerprint = key.fingerprint, keyText = try Self.json(key)
        let sql = try sqlDatabase()
        let model = try await stored("register the device") { () async throws -> DeviceModel in
            if let row = try await sql.raw(LicensingQueries.device(subject: subject, fingerprint: fingerprint)).first(),
               let existing = try await DeviceModel.find(try row.decode(column: "device_id", as: String.self), on: database) {
                if name != nil { existing.name = name }
                if externalID != nil { existing.externalID = externalID }
                try await existing.save(on: database)
                return existing
            }
            let model = DeviceModel(id: SecureRandom.uuidV7(at: now).uuidString.lowercased(), subject: subject, publicKey: keyText, fingerprint: fingerprint,
                                    name: name, externalID: externalID, registeredAt: now)
            try await model.create(on: database)
            return model
        }
        return try record(model)
    }

    /// The device with this ID.
    public func device(_ id: String) async throws(LicensingError) -> DeviceRecord {
        // Every request of a device comes here: plain SQL, because Fluent's model reading reflects on the model's
        // fields at every row, a large part of a device request's CPU.
        let sql = try sqlDatabase()
        let found = try await stored("read devices") { () async throws -> (any SQLRow)? in
            try await sql.raw(LicensingQueries.device(id: id)).first()
        }
        guard let row = found else { throw .unregisteredDevice }
        let fields = try await stored("read devices") { () throws -> (String, String, String?, String?, Date, Bool?) in
            (try row.decode(column: "subject", as: String.self), try row.decode(column: "public_key", as: String.self),
             try row.decode(column: "name", as: String?.self), try row.decode(column: "external_id", as: String?.self),
             try row.decode(column: "registered_at", as: Date.self), try row.decode(column: "disabled", as: Bool?.self))
        }
        guard let key = RightsJSON.value(PublicKeyJWK.self, from: fields.1) else { throw .storage("a stored device key cannot be read") }
        return DeviceRecord(deviceID: id, subject: fields.0, publicKey: key, name: fields.2, externalID: fields.3, registeredAt: fields.4,
                            disabled: fields.5 ?? false)
    }

    /// Disables a device (no new license, no renewal) or enables it again; false when no such device is registered.
    @discardableResult
    public func setDisabled(_ id: String, _ disabled: Bool) async throws(LicensingError) -> Bool {
        guard let model = try await stored("read devices", { try await DeviceModel.find(id, on: database) }) else { return false }
        model.disabled = disabled
        try await stored("update the device") { try await model.save(on: database) }
        return true
    }

    /// Records a license issued to a device.
    public func recordIssued(_ license: DeviceLicenseRecord) async throws(LicensingError) {
        let model = DeviceLicenseModel(id: license.licenseID, deviceID: license.deviceID, subject: license.subject, assetID: license.assetID,
                                       persistent: license.persistent, rights: try Self.json(license.rights), issuedAt: license.issuedAt)
        model.customData = license.customData
        let bucket = Rollups.Bucket(license.persistent ? "device-license:persistent" : "device-license:streaming", at: license.issuedAt)
        try await stored("record the license") {
            try await database.transaction { database in
                try await model.create(on: database)
                guard let sql = database as? any SQLDatabase else { return }
                try await Rollups.add([bucket: 1], on: sql)
            }
        }
    }

    /// The license with this ID.
    public func license(_ id: String) async throws(LicensingError) -> DeviceLicenseRecord {
        try record(try await model(id))
    }

    /// Marks a license renewed with new rights, or released.
    public func update(_ id: String, state: DeviceLicenseState, rights: Rights? = nil, at now: Date) async throws(LicensingError) {
        let model = try await model(id)
        model.state = state.rawValue
        if let rights { model.rights = try Self.json(rights) }
        if state == .renewed { model.renewedAt = now }
        if state == .released { model.releasedAt = model.releasedAt ?? now }
        try await stored("update the license") { try await model.save(on: database) }
    }

    /// Records a device request's nonce; throws `replayed` when this device used it before (while nonces
    /// are kept: `retention`). Nonces older than that are forgotten, at most once every `noncePruning` by this
    /// process, so the table stays small without a delete at every request.
    public func consumeNonce(_ nonce: String, device: String, at now: Date, retention: TimeInterval) async throws(LicensingError) {
        let due = pruned.withLock { last -> Bool in
            guard now.timeIntervalSince(last) >= Self.noncePruning || now < last else { return false }
            last = now
            return true
        }
        if due {
            let sql = try sqlDatabase()
            try await stored("forget old nonces") { try await sql.raw(LicensingQueries.forgetNonces(before: now.addingTimeInterval(-retention))).run() }
        }
        do {
            // Plain SQL, with an ID from the random reservoir: Fluent's would open /dev/urandom for each request.
            try await sqlDatabase().raw(LicensingQueries.insertNonce(id: SecureRandom.uuid(), device: device, nonce: nonce, at: now)).run()
        } catch {
            // The unique index (this device used the nonce, here or on another server of a scale-out), or a failure.
            let sql = try sqlDatabase()
            let seen = try await stored("read nonces") { try await sql.raw(LicensingQueries.nonce(device: device, nonce: nonce)).first() != nil }
            guard !seen else { throw .replayed("this request was already answered (its nonce was used before)") }
            throw .storage("cannot record the request's nonce")
        }
    }

    /// How often one process forgets old nonces.
    static let noncePruning: TimeInterval = 30

    /// The licenses issued to one device, newest first (at most `limit`), through the licenses' index by device.
    public func licenses(device: String, limit: Int = 10_000) async throws(LicensingError) -> [DeviceLicenseRecord] {
        let sql = try sqlDatabase()
        let rows = try await stored("read licenses") { try await sql.raw(LicensingQueries.licenses(device: device, limit: limit)).all() }
        var records: [DeviceLicenseRecord] = []
        for row in rows { records.append(try record(row)) }
        return records
    }

    private func model(_ id: String) async throws(LicensingError) -> DeviceLicenseModel {
        guard let model = try await stored("read licenses", { try await DeviceLicenseModel.find(id, on: database) }) else {
            throw .unknownAsset("license \(id.prefix(64))")
        }
        return model
    }

    /// The operator's reads: pages, counts, licenses per hour.
    public var listings: DeviceListings { DeviceListings(database: database) }

    static func json(_ value: some Encodable) throws(LicensingError) -> String {
        guard let text = RightsJSON.text(value) else { throw .storage("a value cannot be encoded") }
        return text
    }
}

extension DeviceRecord {
    /// The registry's devices listing's name in its cursors.
    public static let listing = "registered-devices"
}

extension DeviceLicenseRecord {
    /// The device licenses listing's name in its cursors.
    public static let listing = "device-licenses"
}
