import FluentKit
import Foundation
import SQLKit

/// FairPlay rental bindings and offline keys in the license service's database (SQLite or PostgreSQL). A binding is
/// one row per subject and asset, taken with `SELECT … FOR UPDATE` on PostgreSQL, so two devices racing for one
/// rental on two nodes get one binding.
public struct FluentFairPlayRecords: FairPlayRecording {
    let database: any Database

    /// The records on `database` (migrated by ``LicensingDatabase``).
    public init(database: any Database) {
        self.database = database
    }

    public func bindRental(subject: String, asset: String, device: String, until: Date, at now: Date) async throws(LicensingError) {
        let id = subject + "\n" + asset
        do {
            try await database.transaction { database in
                guard let sql = database as? any SQLDatabase else { throw LicensingError.storage("FairPlay records need an SQL database") }
                try await sql.raw("""
                    INSERT INTO \(ident: FairPlayRentalModel.schema) (rental_id, device, bound_until) VALUES (\(bind: id), \(bind: device), \(bind: until))
                    ON CONFLICT (rental_id) DO NOTHING
                    """).run()
                if sql.dialect.name == "postgresql" {
                    try await sql.raw("SELECT rental_id FROM \(ident: FairPlayRentalModel.schema) WHERE rental_id = \(bind: id) FOR UPDATE").run()
                }
                guard let row = try await FairPlayRentalModel.find(id, on: database) else { throw LicensingError.storage("the rental row is missing") }
                if row.device == device { return }
                if FairPlayLeaseRules.refuses(bound: row.device, until: row.boundUntil, device: device, at: now) { throw LicensingError.rentalBound }
                row.device = device  // the last binding ended: the rental starts again on this device
                row.boundUntil = until
                try await row.save(on: database)
            }
        } catch let error as LicensingError {
            throw error
        } catch {
            throw .storage("the rental's device could not be recorded")
        }
    }

    public func recordOfflineKey(_ key: OfflineKeyRecord) async throws(LicensingError) {
        do { try await FairPlayOfflineKeyModel(key).create(on: database) } catch { throw .storage("the offline key could not be recorded") }
    }

    public func synced(contentID: String, durationToExpiry: UInt32, subject: String, at now: Date) async throws(LicensingError) -> OfflineKeyRecord? {
        do {
            guard let row = try await FairPlayOfflineKeyModel.find(contentID, on: database), row.subject == subject else { return nil }
            let record = row.value.synced(durationToExpiry: durationToExpiry, at: now)
            row.lastSync = record.lastSync
            row.durationToExpiry = record.durationToExpiry.map(Int64.init)
            row.state = record.state.rawValue
            try await row.save(on: database)
            return record
        } catch {
            throw .storage("the Sync SPC could not be recorded")
        }
    }

    public func offlineKeys(subject: String?, limit: Int) async throws(LicensingError) -> [OfflineKeyRecord] {
        do {
            let query = FairPlayOfflineKeyModel.query(on: database)
            if let subject { query.filter(\.$subject == subject) }
            return try await query.sort(\.$issued, .descending).limit(max(0, min(limit, 100_000))).all().map(\.value)
        } catch {
            throw .storage("cannot read the offline keys")
        }
    }
}

/// A combined rental and lease bound to a device, by subject and asset.
final class FairPlayRentalModel: Model, @unchecked Sendable {
    static let schema = "satchel_fairplay_rentals"

    /// The subject and the asset, a newline between.
    @ID(custom: "rental_id", generatedBy: .user) var id: String?
    @Field(key: "device") var device: String
    @Field(key: "bound_until") var boundUntil: Date

    init() {}
}

/// A download's offline key, by the content ID its CKC carried.
final class FairPlayOfflineKeyModel: Model, @unchecked Sendable {
    static let schema = "satchel_fairplay_offline_keys"

    @ID(custom: "content_id", generatedBy: .user) var id: String?
    @Field(key: "asset_id") var assetID: String
    @Field(key: "subject") var subject: String
    @Field(key: "device") var device: String
    @Field(key: "issued_at") var issued: Date
    @Field(key: "storage_seconds") var storageSeconds: Int64
    @Field(key: "playback_seconds") var playbackSeconds: Int64
    @OptionalField(key: "last_sync") var lastSync: Date?
    @OptionalField(key: "duration_to_expiry") var durationToExpiry: Int64?
    @Field(key: "state") var state: String

    init() {}

    init(_ record: OfflineKeyRecord) {
        id = record.contentID
        assetID = record.assetID
        subject = record.subject
        device = record.device
        issued = record.issued
        storageSeconds = Int64(record.storageSeconds)
        playbackSeconds = Int64(record.playbackSeconds)
        lastSync = record.lastSync
        durationToExpiry = record.durationToExpiry.map(Int64.init)
        state = record.state.rawValue
    }

    var value: OfflineKeyRecord {
        OfflineKeyRecord(contentID: id ?? "", assetID: assetID, subject: subject, device: device, issued: issued,
                         storageSeconds: UInt32(clamping: storageSeconds), playbackSeconds: UInt32(clamping: playbackSeconds), lastSync: lastSync,
                         durationToExpiry: durationToExpiry.map { UInt32(clamping: $0) }, state: OfflineKeyRecord.State(rawValue: state) ?? .active)
    }
}

/// The FairPlay records' tables.
struct CreateFairPlayRecords: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(FairPlayRentalModel.schema)
            .field("rental_id", .string, .identifier(auto: false))
            .field("device", .string, .required).field("bound_until", .datetime, .required)
            .create()
        try await database.schema(FairPlayOfflineKeyModel.schema)
            .field("content_id", .string, .identifier(auto: false))
            .field("asset_id", .string, .required).field("subject", .string, .required).field("device", .string, .required)
            .field("issued_at", .datetime, .required).field("storage_seconds", .int64, .required).field("playback_seconds", .int64, .required)
            .field("last_sync", .datetime).field("duration_to_expiry", .int64).field("state", .string, .required)
            .create()
    }

    func revert(on database: any Database) async throws {
        for schema in [FairPlayOfflineKeyModel.schema, FairPlayRentalModel.schema] { try await database.schema(schema).delete() }
    }
}
