import Crypto
import FluentKit
import Foundation
import SatchelBytes
import SatchelRights
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
}

/// Devices, the licenses issued to them, and the server's signing key, in the licensing database.
public struct DeviceRegistry: Sendable {
    private let database: any Database
    private let kek: KeyEncryptionKey
    private let signer = Locked<(kid: String, key: P256.Signing.PrivateKey)?>(nil)

    /// A registry over `database`; the signing key is sealed with `kek`.
    public init(database: any Database, kek: KeyEncryptionKey) {
        self.database = database
        self.kek = kek
    }

    /// The key licenses, certificates and times are signed with: made on first use, then read from the database.
    public func signingKey() async throws(LicensingError) -> (kid: String, key: P256.Signing.PrivateKey) {
        if let cached = signer.withLock({ $0 }) { return cached }
        do {
            if let model = try await SigningKeyModel.query(on: database).sort(\.$createdAt).first(), let kid = model.id {
                let raw = try kek.open(Array(model.sealedKey), keyID: "signing:\(kid)")
                let found = (kid: kid, key: try P256.Signing.PrivateKey(rawRepresentation: raw.bytes))
                signer.withLock { $0 = found }
                return found
            }
            let key = P256.Signing.PrivateKey()
            let kid = String(PublicKeyJWK(key.publicKey).fingerprint.prefix(16))
            let sealed = try kek.seal(SecretBytes(Array(key.rawRepresentation)), keyID: "signing:\(kid)")
            try await SigningKeyModel(id: kid, sealedKey: Data(sealed), createdAt: Date()).create(on: database)
            return try await signingKey()  // another server may have made one at the same time: the oldest wins
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("cannot read or make the license signing key: \(String(describing: error).prefix(200))")
        }
    }

    /// Registers a device key for a user: the same key registered again by the same user keeps its device ID.
    public func register(_ key: PublicKeyJWK, subject: String, name: String?, externalID: String?, at now: Date) async throws(LicensingError) -> DeviceRecord {
        let fingerprint = key.fingerprint
        do {
            if let existing = try await DeviceModel.query(on: database).filter(\.$subject == subject).filter(\.$fingerprint == fingerprint).first() {
                if name != nil { existing.name = name }
                if externalID != nil { existing.externalID = externalID }
                try await existing.save(on: database)
                return try record(existing)
            }
            let model = DeviceModel(id: UUID().uuidString.lowercased(), subject: subject, publicKey: try Self.json(key), fingerprint: fingerprint,
                                    name: name, externalID: externalID, registeredAt: now)
            try await model.create(on: database)
            return try record(model)
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("cannot register the device: \(String(describing: error).prefix(200))")
        }
    }

    /// The device with this ID.
    public func device(_ id: String) async throws(LicensingError) -> DeviceRecord {
        let model: DeviceModel?
        do { model = try await DeviceModel.find(id, on: database) } catch { throw .storage("cannot read devices") }
        guard let model else { throw .notEntitled("the device is not registered with this server") }
        return try record(model)
    }

    /// Records a license issued to a device.
    public func recordIssued(_ license: DeviceLicenseRecord) async throws(LicensingError) {
        do {
            try await DeviceLicenseModel(id: license.licenseID, deviceID: license.deviceID, subject: license.subject, assetID: license.assetID,
                                         persistent: license.persistent, rights: Self.json(license.rights), issuedAt: license.issuedAt)
                .create(on: database)
        } catch {
            throw .storage("cannot record the license: \(String(describing: error).prefix(200))")
        }
    }

    /// The license with this ID.
    public func license(_ id: String) async throws(LicensingError) -> DeviceLicenseRecord {
        let model: DeviceLicenseModel?
        do { model = try await DeviceLicenseModel.find(id, on: database) } catch { throw .storage("cannot read licenses") }
        guard let model else { throw .unknownAsset("license \(id.prefix(64))") }
        return try record(model)
    }

    /// Marks a license renewed with new rights, or released.
    public func update(_ id: String, state: DeviceLicenseState, rights: Rights? = nil, at now: Date) async throws(LicensingError) {
        do {
            guard let model = try await DeviceLicenseModel.find(id, on: database) else { throw LicensingError.unknownAsset("license \(id.prefix(64))") }
            model.state = state.rawValue
            if let rights { model.rights = try Self.json(rights) }
            if state == .renewed { model.renewedAt = now }
            if state == .released { model.releasedAt = model.releasedAt ?? now }
            try await model.save(on: database)
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("cannot update the license: \(String(describing: error).prefix(200))")
        }
    }

    /// Every device license, newest first.
    public func licenses(limit: Int = 1000) async throws(LicensingError) -> [DeviceLicenseRecord] {
        do {
            return try await DeviceLicenseModel.query(on: database).sort(\.$issuedAt, .descending).limit(limit).all().map { model throws(LicensingError) in
                try record(model)
            }
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("cannot read licenses")
        }
    }

    private func record(_ model: DeviceModel) throws(LicensingError) -> DeviceRecord {
        guard let key = try? JSONDecoder().decode(PublicKeyJWK.self, from: Data(model.publicKey.utf8)) else {
            throw .storage("a stored device key cannot be read")
        }
        return DeviceRecord(deviceID: model.id ?? "", subject: model.subject, publicKey: key, name: model.name, externalID: model.externalID,
                            registeredAt: model.registeredAt)
    }

    private func record(_ model: DeviceLicenseModel) throws(LicensingError) -> DeviceLicenseRecord {
        guard let rights = try? Self.decoder.decode(Rights.self, from: Data(model.rights.utf8)),
              let state = DeviceLicenseState(rawValue: model.state) else {
            throw .storage("a stored license cannot be read")
        }
        return DeviceLicenseRecord(licenseID: model.id ?? "", deviceID: model.deviceID, subject: model.subject, assetID: model.assetID,
                                   persistent: model.persistent, state: state, rights: rights, issuedAt: model.issuedAt,
                                   renewedAt: model.renewedAt, releasedAt: model.releasedAt)
    }

    static func json(_ value: some Encodable) throws(LicensingError) -> String {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = .sortedKeys
        guard let data = try? encoder.encode(value) else { throw .storage("a value cannot be encoded") }
        return String(decoding: data, as: UTF8.self)
    }

    static var decoder: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }
}
