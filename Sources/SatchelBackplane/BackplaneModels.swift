import FluentKit
import Foundation

/// A user the backplane knows: its own limits (nil fields: the global ones), and the row every change to the user's
/// devices and grants locks first, so that limits hold across nodes.
final class BackplaneUserModel: Model, @unchecked Sendable {
    static let schema = "backplane_users"

    @ID(custom: "user_id", generatedBy: .user) var id: String?
    @OptionalField(key: "max_devices") var maxDevices: Int?
    @OptionalField(key: "max_assets_per_device") var maxAssetsPerDevice: Int?
    @OptionalField(key: "max_downloads") var maxDownloads: Int?
    /// Added by ``AddStreamSlots``.
    @OptionalField(key: "max_streams") var maxStreams: Int?

    init() {}
}

/// A device: the download-enabled flag is a boolean column, so an operator can check the limit with SQL.
final class BackplaneDeviceModel: Model, @unchecked Sendable {
    static let schema = "backplane_devices"

    @ID(custom: "device_id", generatedBy: .user) var id: String?
    @Field(key: "user_id") var user: String
    @OptionalField(key: "external_id") var externalID: String?
    @Field(key: "name") var name: String
    @Field(key: "platform") var platform: String
    @Field(key: "download_enabled") var downloadEnabled: Bool
    @Field(key: "state") var state: String
    @Field(key: "registered_at") var registered: Date
    /// The sequence the device's next command gets.
    @Field(key: "next_sequence") var nextSequence: Int64

    init() {}

    var value: BackplaneDevice {
        BackplaneDevice(deviceID: id ?? "", user: user, externalID: externalID, name: name, platform: platform, downloadEnabled: downloadEnabled,
                        state: BackplaneDevice.State(rawValue: state) ?? .active, registered: registered)
    }
}

/// A download permission granted: one asset on one device (held until the device deletes it or is wiped).
final class BackplaneGrantModel: Model, @unchecked Sendable {
    static let schema = "backplane_grants"

    @ID(custom: "grant_id", generatedBy: .user) var id: String?
    @Field(key: "device_id") var device: String
    @Field(key: "user_id") var user: String
    @Field(key: "asset_id") var asset: String
    @Field(key: "granted_at") var granted: Date

    init() {}
}

/// A command to a device, delivered until acknowledged.
final class BackplaneCommandModel: Model, @unchecked Sendable {
    static let schema = "backplane_commands"

    @ID(custom: "command_id", generatedBy: .user) var id: String?
    @Field(key: "device_id") var device: String
    @Field(key: "sequence") var sequence: Int64
    /// The command in its JSON form.
    @Field(key: "body") var body: String
    @Field(key: "acknowledged") var acknowledged: Bool

    init() {}
}

/// A document of the backplane: the global limits, the settings pushed to every device.
final class BackplaneDocumentModel: Model, @unchecked Sendable {
    static let schema = "backplane_documents"

    @ID(custom: "name", generatedBy: .user) var id: String?
    @Field(key: "body") var body: String

    init() {}
}

/// The backplane's tables (SQLite and PostgreSQL alike).
public struct CreateBackplaneSchema: AsyncMigration {
    /// The migration.
    public init() {}

    public func prepare(on database: any Database) async throws {
        try await database.schema(BackplaneUserModel.schema)
            .field("user_id", .string, .identifier(auto: false))
            .field("max_devices", .int).field("max_assets_per_device", .int).field("max_downloads", .int)
            .create()
        try await database.schema(BackplaneDeviceModel.schema)
            .field("device_id", .string, .identifier(auto: false))
            .field("user_id", .string, .required).field("external_id", .string).field("name", .string, .required)
            .field("platform", .string, .required).field("download_enabled", .bool, .required).field("state", .string, .required)
            .field("last_sync", .datetime).field("registered_at", .datetime, .required).field("next_sequence", .int64, .required)
            .unique(on: "external_id")
            .create()
        try await database.schema(BackplaneGrantModel.schema)
            .field("grant_id", .string, .identifier(auto: false))
            .field("device_id", .string, .required).field("user_id", .string, .required).field("asset_id", .string, .required)
            .field("granted_at", .datetime, .required)
            .unique(on: "device_id", "asset_id")
            .create()
        try await database.schema(BackplaneCommandModel.schema)
            .field("command_id", .string, .identifier(auto: false))
            .field("device_id", .string, .required).field("sequence", .int64, .required).field("body", .string, .required)
            .field("acknowledged", .bool, .required)
            .unique(on: "device_id", "sequence")
            .create()
        try await database.schema(BackplaneDocumentModel.schema)
            .field("name", .string, .identifier(auto: false)).field("body", .string, .required)
            .create()
    }

    public func revert(on database: any Database) async throws {
        for schema in [BackplaneDocumentModel.schema, BackplaneCommandModel.schema, BackplaneGrantModel.schema, BackplaneDeviceModel.schema,
                       BackplaneUserModel.schema] {
            try await database.schema(schema).delete()
        }
    }
}
