import FluentKit
import Foundation
import SatchelBytes

/// Where the backplane keeps stream slots: the seam between `StreamSlotRules` and a database. The account's stream
/// limit holds in the store itself, across nodes, as the backplane's other limits do.
public protocol StreamSlotStoring: Sendable {
    /// Takes a slot for `device` to play `asset` when its account is under its stream limit (leases ended at `now`
    /// are freed first).
    func acquire(device: String, asset: String, at now: Date) async throws(BackplaneError) -> StreamSlotAnswer
    /// Renews the device's slot for another lease; `slotLost` when its lease already ended or it was released.
    func renew(device: String, slot: String, at now: Date) async throws(BackplaneError) -> StreamSlotAnswer
    /// Takes, or renews, the slot `slotID` for a holder that is not a backplane device (a FairPlay device by its HU:
    /// the FairPlay Streaming Programming Guide, "Secure Lease"), for a lease of `seconds`: renewing a slot still held
    /// always succeeds; taking one is
    /// refused over `user`'s stream limit.
    func lease(slotID: String, user: String, holder: String, asset: String, seconds: UInt32, at now: Date) async throws(BackplaneError) -> StreamSlotAnswer
    /// Releases the device's slot (releasing one already gone changes nothing).
    func release(device: String, slot: String) async throws(BackplaneError)
    /// The slots held at `now` (every account's, or `user`'s), oldest first, at most `limit`.
    func slots(user: String?, at now: Date, page: ListingRequest) async throws(BackplaneError) -> ListingPage<StreamSlot>
}

/// The stream slots on a FluentKit database (the backplane's, migrated with ``BackplaneMigrations/all``). Taking and
/// renewing a slot first take the user's row, as every change to the backplane's counted things does.
public struct FluentStreamSlots: StreamSlotStoring {
    let store: FluentBackplaneStore

    /// The slots on `database`.
    public init(database: any Database) {
        store = FluentBackplaneStore(database: database)
    }

    public func acquire(device: String, asset: String, at now: Date) async throws(BackplaneError) -> StreamSlotAnswer {
        guard !asset.isEmpty, asset.utf8.count <= 200 else { throw .badRequest("assetID is 1 to 200 bytes") }
        return try await store.transaction("take a stream slot") { database async throws in
            let user = try await FluentBackplaneStore.model(.device(device), on: database).user
            try await BackplaneRowLocks.user(user, on: database)
            let model = try await FluentBackplaneStore.model(.device(device), on: database)
            let lease = try await Self.lease(on: database)
            let (held, limits) = try await Self.held(user: user, at: now, on: database)
            if let refusal = StreamSlotRules.refusal(device: model.value, heldSlots: held, limits: limits) {
                return StreamSlotAnswer(assetID: asset, refused: refusal, leaseSeconds: lease)
            }
            let slot = StreamSlot(slotID: SecureRandom.uuidV7(at: now).uuidString.lowercased(), user: user, deviceID: device, assetID: asset, acquired: now,
                                  expires: StreamSlotRules.leaseEnd(from: now, lease: lease))
            try await BackplaneSlotModel(slot).create(on: database)
            return StreamSlotAnswer(granted: slot, leaseSeconds: lease)
        }
    }

    public func renew(device: String, slot: String, at now: Date) async throws(BackplaneError) -> StreamSlotAnswer {
        try await store.transaction("renew the stream slot") { database async throws in
            let user = try await FluentBackplaneStore.model(.device(device), on: database).user
            try await BackplaneRowLocks.user(user, on: database)
            guard let row = try await BackplaneSlotModel.find(slot, on: database), row.device == device else { throw BackplaneError.slotLost(slot) }
            let lease = try await Self.lease(on: database)
            let renewed = try StreamSlotRules.renewed(row.value, at: now, lease: lease)
            row.expires = renewed.expires
            try await row.save(on: database)
            return StreamSlotAnswer(granted: renewed, leaseSeconds: lease)
        }
    }

    public func lease(slotID: String, user: String, holder: String, asset: String, seconds: UInt32, at now: Date) async throws(BackplaneError) -> StreamSlotAnswer {
        guard !user.isEmpty, user.utf8.count <= 200, !asset.isEmpty, asset.utf8.count <= 200, seconds > 0 else {
            throw .badRequest("a lease needs a user and an asset of 1 to 200 bytes, and a length")
        }
        return try await store.transaction("take the lease's stream slot") { database async throws in
            try await BackplaneRowLocks.user(user, on: database)
            let end = StreamSlotRules.leaseEnd(from: now, lease: seconds)
            if let row = try await BackplaneSlotModel.find(slotID, on: database), row.user == user, row.value.isHeld(at: now) {
                row.expires = max(row.expires, end)
                try await row.save(on: database)
                return StreamSlotAnswer(granted: row.value, leaseSeconds: seconds)
            }
            try await BackplaneSlotModel.query(on: database).filter(\.$id == slotID).delete()  // another user's, or ended
            let (held, limits) = try await Self.held(user: user, at: now, on: database)
            if let refusal = StreamSlotRules.refusal(heldSlots: held, limits: limits) {
                return StreamSlotAnswer(assetID: asset, refused: refusal, leaseSeconds: seconds)
            }
            let slot = StreamSlot(slotID: slotID, user: user, deviceID: holder, assetID: asset, acquired: now, expires: end)
            try await BackplaneSlotModel(slot).create(on: database)
            return StreamSlotAnswer(granted: slot, leaseSeconds: seconds)
        }
    }

    public func release(device: String, slot: String) async throws(BackplaneError) {
        try await store.transaction("release the stream slot") { database async throws in
            try await BackplaneSlotModel.query(on: database).filter(\.$id == slot).filter(\.$device == device).delete()
        }
    }

    public func slots(user: String?, at now: Date, page: ListingRequest) async throws(BackplaneError) -> ListingPage<StreamSlot> {
        try await store.transaction("list the stream slots", atomic: false) { database async throws in
            var query = BackplaneSlotModel.query(on: database).filter(\.$expires > now)
            if let user { query = query.filter(\.$user == user) }
            if let after = page.afterKey?.first { query = query.filter(\.$id > after) }
            let rows = try await query.sort(\.$id).limit(page.limit + 1).all().map(\.value)
            return ListingPage(reading: rows, limit: page.limit, listing: StreamSlot.listing) { [$0.slotID] }
        }
    }

    /// The slots `user` holds at `now` (ended leases freed first) and the user's limits; the user's row is held.
    static func held(user: String, at now: Date, on database: any Database) async throws -> (held: Int, limits: BackplaneLimits) {
        let sql = try BackplaneQueries.sqlDatabase(database)
        try await sql.raw(BackplaneQueries.endedSlots(user: user, at: now)).run()
        let held = try await BackplaneQueries.count(BackplaneQueries.slots(user: user), on: database)
        return (held, try await BackplaneLimitRows.effectiveLimits(of: user, on: database))
    }

    /// The lease in force (the settings', else a minute).
    static func lease(on database: any Database) async throws -> UInt32 {
        let settings = try await FluentBackplaneStore.document(FluentBackplaneStore.settingsDocument, as: BackplaneSettings.self, on: database)
        return settings?.streamLease ?? StreamSlotRules.defaultLease
    }
}

extension StreamSlot {
    /// The slots listing's name in its cursors.
    public static let listing = "slots"
}
