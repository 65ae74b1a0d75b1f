import FluentKit
import Foundation
import SQLKit

/// A registered device: its public key, for a user.
final class DeviceModel: Model, @unchecked Sendable {
    static let schema = "satchel_devices"

    @ID(custom: "device_id", generatedBy: .user) var id: String?
    @Field(key: "subject") var subject: String
    @Field(key: "public_key") var publicKey: String
    @Field(key: "fingerprint") var fingerprint: String
    @OptionalField(key: "name") var name: String?
    @OptionalField(key: "external_id") var externalID: String?
    @Field(key: "registered_at") var registeredAt: Date
    /// Set by the operator: no new license or renewal (nil on rows from before the column).
    @OptionalField(key: "disabled") var disabled: Bool?

    init() {}

    init(id: String, subject: String, publicKey: String, fingerprint: String, name: String?, externalID: String?, registeredAt: Date) {
        self.id = id
        self.subject = subject
        self.publicKey = publicKey
        self.fingerprint = fingerprint
        self.name = name
        self.externalID = externalID
        self.registeredAt = registeredAt
    }
}

/// A Satchel license issued to a device, with its state.
final class DeviceLicenseModel: Model, @unchecked Sendable {
    static let schema = "satchel_device_licenses"

    @ID(custom: "license_id", generatedBy: .user) var id: String?
    @Field(key: "device_id") var deviceID: String
    @Field(key: "subject") var subject: String
    @Field(key: "asset_id") var assetID: String
    @Field(key: "persistent") var persistent: Bool
    @Field(key: "state") var state: String
    @Field(key: "rights") var rights: String
    @Field(key: "issued_at") var issuedAt: Date
    @OptionalField(key: "renewed_at") var renewedAt: Date?
    @OptionalField(key: "released_at") var releasedAt: Date?
    @OptionalField(key: "custom_data") var customData: String?

    init() {}

    init(id: String, deviceID: String, subject: String, assetID: String, persistent: Bool, rights: String, issuedAt: Date) {
        self.id = id
        self.deviceID = deviceID
        self.subject = subject
        self.assetID = assetID
        self.persistent = persistent
        self.state = DeviceLicenseState.active.rawValue
        self.rights = rights
        self.issuedAt = issuedAt
    }
}

/// The license server's signing key, sealed with the KEK (every server of a scale-out signs with it).
final class SigningKeyModel: Model, @unchecked Sendable {
    static let schema = "satchel_signing_keys"

    @ID(custom: "kid", generatedBy: .user) var id: String?
    @Field(key: "sealed_key") var sealedKey: Data
    @Field(key: "created_at") var createdAt: Date
    /// The statement the key before this one signed to introduce it (nil for the first key).
    @OptionalField(key: "introduction") var introduction: String?

    init() {}

    init(id: String, sealedKey: Data, createdAt: Date, introduction: String? = nil) {
        self.id = id
        self.sealedKey = sealedKey
        self.createdAt = createdAt
        self.introduction = introduction
    }
}

/// Adds devices, device licenses and the signing key (migration 2: databases made before it keep their rows).
struct CreateDeviceSchema: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(DeviceModel.schema)
            .field("device_id", .string, .identifier(auto: false))
            .field("subject", .string, .required)
            .field("public_key", .string, .required)
            .field("fingerprint", .string, .required)
            .field("name", .string)
            .field("external_id", .string)
            .field("registered_at", .datetime, .required)
            .unique(on: "subject", "fingerprint")
            .create()
        try await database.schema(DeviceLicenseModel.schema)
            .field("license_id", .string, .identifier(auto: false))
            .field("device_id", .string, .required, .references(DeviceModel.schema, "device_id", onDelete: .cascade))
            .field("subject", .string, .required)
            .field("asset_id", .string, .required)
            .field("persistent", .bool, .required)
            .field("state", .string, .required)
            .field("rights", .string, .required)
            .field("issued_at", .datetime, .required)
            .field("renewed_at", .datetime)
            .field("released_at", .datetime)
            .create()
        try await database.schema(SigningKeyModel.schema)
            .field("kid", .string, .identifier(auto: false))
            .field("sealed_key", .data, .required)
            .field("created_at", .datetime, .required)
            .create()
    }

    func revert(on database: any Database) async throws {
        for schema in [SigningKeyModel.schema, DeviceLicenseModel.schema, DeviceModel.schema] {
            try await database.schema(schema).delete()
        }
    }
}

/// The operator's switch on a device (the dashboard's enable/disable).
struct AddDeviceDisabled: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(DeviceModel.schema).field("disabled", .bool).update()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(DeviceModel.schema).deleteField("disabled").update()
    }
}

/// The custom data a license request carried, kept in the audit and with each device license.
struct AddLicenseCustomData: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(LicenseModel.schema).field("custom_data", .string).update()
        try await database.schema(DeviceLicenseModel.schema).field("custom_data", .string).update()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(DeviceLicenseModel.schema).deleteField("custom_data").update()
        try await database.schema(LicenseModel.schema).deleteField("custom_data").update()
    }
}

/// An index on the nonces' times: forgetting old nonces reads only the old ones (a full scan of every nonce kept
/// — every device request of the last 11 minutes — at every request was the device endpoints' main cost).
struct IndexDeviceNonceTimes: AsyncMigration {
    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.create(index: "satchel_device_nonces_seen_at").on(DeviceNonceModel.schema).column("seen_at").run()
    }

    func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.drop(index: "satchel_device_nonces_seen_at").run()
    }
}

/// Where a device license stands.
public enum DeviceLicenseState: String, Codable, Sendable {
    /// Issued, never renewed.
    case active
    /// Renewed at least once.
    case renewed
    /// Given back by the device.
    case released
}

/// A device request's nonce, kept while a replay of that request could still be accepted.
final class DeviceNonceModel: Model, @unchecked Sendable {
    static let schema = "satchel_device_nonces"

    @ID(key: .id) var id: UUID?
    @Field(key: "device_id") var deviceID: String
    @Field(key: "nonce") var nonce: String
    @Field(key: "seen_at") var seenAt: Date

    init() {}

    init(deviceID: String, nonce: String, seenAt: Date) {
        self.deviceID = deviceID
        self.nonce = nonce
        self.seenAt = seenAt
    }
}

/// Adds the nonces of device requests (migration 3), unique per device so two servers of a scale-out
/// cannot both accept the same request.
struct CreateDeviceNonces: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(DeviceNonceModel.schema)
            .id()
            .field("device_id", .string, .required)
            .field("nonce", .string, .required)
            .field("seen_at", .datetime, .required)
            .unique(on: "device_id", "nonce")
            .create()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(DeviceNonceModel.schema).delete()
    }
}
