import FluentKit
import SatchelStorage
import Foundation
import SQLKit

/// A stream slot held: freed when its lease ends or the device releases it.
final class BackplaneSlotModel: Model, @unchecked Sendable {
    static let schema = "backplane_slots"

    @ID(custom: "slot_id", generatedBy: .user) var id: String?
    @Field(key: "user_id") var user: String
    @Field(key: "device_id") var device: String
    @Field(key: "asset_id") var asset: String
    @Field(key: "acquired_at") var acquired: Date
    @Field(key: "expires_at") var expires: Date

    init() {}

    init(_ slot: StreamSlot) {
        id = slot.slotID
        user = slot.user
        device = slot.deviceID
        asset = slot.assetID
        acquired = slot.acquired
        expires = slot.expires
    }

    var value: StreamSlot {
        StreamSlot(slotID: id ?? "", user: user, deviceID: device, assetID: asset, acquired: acquired, expires: expires)
    }
}

/// Stream slots: their table, and the users' stream limit (a database made before them gains both).
public struct AddStreamSlots: AsyncMigration {
    /// The migration.
    public init() {}

    public func prepare(on database: any Database) async throws {
        try await database.schema(BackplaneUserModel.schema).field("max_streams", .int).update()
        try await database.schema(BackplaneSlotModel.schema)
            .field("slot_id", .string, .identifier(auto: false))
            .field("user_id", .string, .required).field("device_id", .string, .required).field("asset_id", .string, .required)
            .field("acquired_at", .datetime, .required).field("expires_at", .datetime, .required)
            .create()
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.create(index: "backplane_slots_user_expires").on(BackplaneSlotModel.schema).column("user_id").column("expires_at").run()
    }

    public func revert(on database: any Database) async throws {
        try await database.schema(BackplaneSlotModel.schema).delete()
        try await database.schema(BackplaneUserModel.schema).deleteField("max_streams").update()
    }
}

/// Every migration of the backplane, in order: run them with the license service's.
public enum BackplaneMigrations {
    /// The backplane's tables, then what came after them.
    public static var all: [any Migration] { [CreateBackplaneSchema(), AddStreamSlots(), AddDeviceEvents(), AddFeeds(), AddSubscriptions(), IndexBackplaneForScale(),
                                                    CreateRollups(name: "satchel-backplane-rollups"),
                                                    PartitionByMonth(name: "satchel-backplane-events-by-month", tables: [FluentEventStore.history]),
                                                    IndexOwnLimits(), RoomForSyncTimes(), MoveSyncTimesToTheirTable()] }
}
