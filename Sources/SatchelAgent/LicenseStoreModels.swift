import FluentKit
import Foundation

/// A license kept on the device: the signed license itself (its keys sealed to the device key), and how it is used.
final class AgentLicenseModel: Model, @unchecked Sendable {
    static let schema = "agent_licenses"

    @ID(custom: "license_id", generatedBy: .user) var id: String?
    @Field(key: "asset_id") var assetID: String
    @Field(key: "license") var license: String
    @Field(key: "server") var server: String
    @Field(key: "acquired_at") var acquiredAt: Date
    @OptionalField(key: "first_use") var firstUse: Date?
    @Field(key: "persistent") var persistent: Bool
    @Field(key: "rights") var rights: String
    @Field(key: "key_ids") var keyIDs: String

    init() {}
}

/// A release the server has not yet acknowledged (the license itself is already gone from the device).
final class AgentReleaseModel: Model, @unchecked Sendable {
    static let schema = "agent_releases"

    @ID(custom: "license_id", generatedBy: .user) var id: String?
    @Field(key: "asset_id") var assetID: String
    @Field(key: "server") var server: String
    @Field(key: "owed_since") var owedSince: Date
    @Field(key: "attempts") var attempts: Int

    init() {}
}

/// Named values of the agent's state (the secure clock).
final class AgentStateModel: Model, @unchecked Sendable {
    static let schema = "agent_state"

    @ID(custom: "name", generatedBy: .user) var id: String?
    @Field(key: "value") var value: String

    init() {}
}

/// Creates the agent's tables.
struct CreateAgentSchema: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(AgentLicenseModel.schema)
            .field("license_id", .string, .identifier(auto: false))
            .field("asset_id", .string, .required)
            .field("license", .string, .required)
            .field("server", .string, .required)
            .field("acquired_at", .datetime, .required)
            .field("first_use", .datetime)
            .field("persistent", .bool, .required)
            .field("rights", .string, .required)
            .field("key_ids", .string, .required)
            .create()
        try await database.schema(AgentReleaseModel.schema)
            .field("license_id", .string, .identifier(auto: false))
            .field("asset_id", .string, .required)
            .field("server", .string, .required)
            .field("owed_since", .datetime, .required)
            .field("attempts", .int, .required)
            .create()
        try await database.schema(AgentStateModel.schema)
            .field("name", .string, .identifier(auto: false))
            .field("value", .string, .required)
            .create()
    }

    func revert(on database: any Database) async throws {
        for schema in [AgentStateModel.schema, AgentReleaseModel.schema, AgentLicenseModel.schema] {
            try await database.schema(schema).delete()
        }
    }
}
