import FluentKit
import Foundation
import SatchelBytes

/// An asset and its policy.
final class AssetModel: Model, @unchecked Sendable {
    static let schema = "satchel_assets"

    @ID(custom: "asset_id", generatedBy: .user) var id: String?
    @Field(key: "fairplay_asset_id") var fairPlayAssetID: String
    @Field(key: "policy") var policy: String
    @Timestamp(key: "created_at", on: .create) var createdAt: Date?

    init() {}

    init(id: String, fairPlayAssetID: String, policy: String) {
        self.id = id
        self.fairPlayAssetID = fairPlayAssetID
        self.policy = policy
    }
}

/// A content key, sealed with the KEK.
final class KeyModel: Model, @unchecked Sendable {
    static let schema = "satchel_keys"

    @ID(custom: "key_id", generatedBy: .user) var id: String?
    @Field(key: "asset_id") var assetID: String
    @Field(key: "sealed_key") var sealedKey: Data
    @Field(key: "iv") var iv: String
    @OptionalField(key: "scheme") var scheme: String?
    @OptionalField(key: "signalling") var signalling: String?
    @Timestamp(key: "created_at", on: .create) var createdAt: Date?

    init() {}

    /// Sets every field (a new row's or one being replaced).
    func fill(id: String, assetID: String, sealedKey: Data, iv: String, signalling: KeySignalling?) {
        self.id = id
        self.assetID = assetID
        self.sealedKey = sealedKey
        self.iv = iv
        self.scheme = signalling?.scheme
        self.signalling = signalling?.systems
    }
}

/// One issued license, for audit.
final class LicenseModel: Model, @unchecked Sendable {
    static let schema = "satchel_licenses"

    @ID(key: .id) var id: UUID?
    @Field(key: "asset_id") var assetID: String
    @Field(key: "key_id") var keyID: String
    @Field(key: "subject") var subject: String
    @Field(key: "type") var type: String
    @Field(key: "issued_at") var issuedAt: Date
    @OptionalField(key: "custom_data") var customData: String?

    init() {}

    init(assetID: String, keyID: String, subject: String, type: String, issuedAt: Date) {
        self.id = SecureRandom.uuid()
        self.assetID = assetID
        self.keyID = keyID
        self.subject = subject
        self.type = type
        self.issuedAt = issuedAt
    }
}

/// A FairPlay Sync SPC report (offline rental status from a device).
final class SyncModel: Model, @unchecked Sendable {
    static let schema = "satchel_syncs"

    @ID(key: .id) var id: UUID?
    @Field(key: "content_id") var contentID: String
    @Field(key: "duration_to_expiry") var durationToExpiry: Int64
    @Field(key: "subject") var subject: String
    @Field(key: "received_at") var receivedAt: Date

    init() {}

    init(contentID: String, durationToExpiry: Int64, subject: String, receivedAt: Date) {
        self.id = SecureRandom.uuid()
        self.contentID = contentID
        self.durationToExpiry = durationToExpiry
        self.subject = subject
        self.receivedAt = receivedAt
    }
}

/// Creates the tables.
struct CreateLicensingSchema: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(AssetModel.schema)
            .field("asset_id", .string, .identifier(auto: false))
            .field("fairplay_asset_id", .string, .required)
            .field("policy", .string, .required)
            .field("created_at", .datetime)
            .unique(on: "fairplay_asset_id")
            .create()
        try await database.schema(KeyModel.schema)
            .field("key_id", .string, .identifier(auto: false))
            .field("asset_id", .string, .required, .references(AssetModel.schema, "asset_id", onDelete: .cascade))
            .field("sealed_key", .data, .required)
            .field("iv", .string, .required)
            .field("created_at", .datetime)
            .create()
        try await Self.licenses(on: database).create()
        try await Self.syncs(on: database).create()
    }

    /// The audit's table of licenses as this migration makes it (the audit's own file adds `custom_data`).
    static func licenses(on database: any Database) -> SchemaBuilder {
        database.schema(LicenseModel.schema)
            .id()
            .field("asset_id", .string, .required)
            .field("key_id", .string, .required)
            .field("subject", .string, .required)
            .field("type", .string, .required)
            .field("issued_at", .datetime, .required)
    }

    /// The table of sync reports.
    static func syncs(on database: any Database) -> SchemaBuilder {
        database.schema(SyncModel.schema)
            .id()
            .field("content_id", .string, .required)
            .field("duration_to_expiry", .int64, .required)
            .field("subject", .string, .required)
            .field("received_at", .datetime, .required)
    }

    func revert(on database: any Database) async throws {
        for schema in [SyncModel.schema, LicenseModel.schema, KeyModel.schema, AssetModel.schema] {
            try await database.schema(schema).delete()
        }
    }
}
