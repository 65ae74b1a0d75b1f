import FluentKit
import Foundation
import SatchelBytes
import SQLKit
import SatchelStorage

/// Where the backplane keeps the devices' events: the seam between the routes and a database. An event reported
/// twice (its answer lost, sent again) is kept once: a device's event ID is unique.
public protocol EventStoring: Sendable {
    /// Keeps `events` of `device` (of `user`), received at `received`; answers how many were new.
    func record(_ events: [DeviceEvent], device: String, user: String, received: Date) async throws(BackplaneError) -> Int
    /// The events `query` selects, newest first (by the device's time), at most `limit` (the activity charts).
    func events(_ query: EventQuery, limit: Int) async throws(BackplaneError) -> [RecordedEvent]
    /// A page of the events `query` selects, the last received first.
    func events(_ query: EventQuery, page: ListingRequest) async throws(BackplaneError) -> ListingPage<RecordedEvent>
    /// Events received per hour of `hours` (hour starts, oldest first) by kind, dated by the device, from the hourly roll-ups.
    func perHour(_ kinds: [DeviceEventKind], hours: [Date]) async throws(BackplaneError) -> [DeviceEventKind: [Int]]
    /// How many events `query` selects, by `grouping`, most first: among the newest ``EventRules/countedEvents`` of them
    /// (by the device's time), so a count costs the same on a day of a busy service as on a quiet one.
    func counts(_ query: EventQuery, by grouping: EventGrouping, limit: Int) async throws(BackplaneError) -> [EventCount]
}

/// The events in the backplane's database (SQLite or PostgreSQL): one multi-row insert per batch, conflicts on the
/// device's event ID ignored.
public struct FluentEventStore: EventStoring {
    let sql: any SQLDatabase
    static let table = "backplane_events"
    /// The events as history: partitioned by month of the device's time on PostgreSQL (an event sent again carries the
    /// same time, so its key and time are still unique).
    public static let history = MonthlyPartitions.Table(name: table, key: "record_id", time: "at")

    /// The events on `database` (migrated with ``BackplaneMigrations/all``).
    public init(database: any SQLDatabase) {
        sql = database
    }

    public func record(_ events: [DeviceEvent], device: String, user: String, received: Date) async throws(BackplaneError) -> Int {
        guard !events.isEmpty else { return 0 }
        guard events.count <= EventRules.batchLimit else { throw .badRequest("a batch holds at most \(EventRules.batchLimit) events") }
        for event in events { _ = try event.validated() }
        // The order within a batch (the device's) is kept for events of one second: milliseconds of arrival, then place.
        let base = Int64((received.timeIntervalSince1970 * 1000).rounded(.down)) * 1000
        let rows: [(id: String, values: [any SQLExpression])] = events.enumerated().map { index, event in
            let values: [any Encodable & Sendable] = [device + ":" + event.eventID, device, user, event.kind.rawValue, event.assetID, event.reason,
                                                      event.seconds, event.detail, EventRules.storedTime(event.time, received: received), received,
                                                      base + Int64(index)]
            return (device + ":" + event.eventID, values.map { SQLBind($0) })
        }
        do {
            // The events inserted (not those sent again) are counted into the hourly roll-ups in the same transaction.
            let write: @Sendable (any SQLDatabase) async throws -> Int = { sql in
                // An event sent again is found by its ID first: its device time is clamped against this receipt, so on
                // PostgreSQL (where the key holds the time too, for the partitions) the conflict alone would not catch it.
                let known = Set(try await sql.select().column("record_id").from(Self.table)
                    .where("record_id", .in, rows.map(\.id)).all().map { try $0.decode(column: "record_id", as: String.self) })
                let fresh = rows.filter { !known.contains($0.id) }
                guard !fresh.isEmpty else { return 0 }
                let inserted = try await sql.insert(into: Self.table)
                    .columns("record_id", "device_id", "user_id", "kind", "asset_id", "reason", "seconds", "detail", "at", "received_at", "ordinal")
                    .rows(fresh.map(\.values))
                    .ignoringConflicts()
                    .returning("kind", "at")
                    .all()
                let counted = try inserted.map { (try $0.decode(column: "kind", as: String.self), try $0.decode(column: "at", as: Date.self)) }
                try await Rollups.add(Rollups.tally(counted) { Rollups.Bucket("event:" + $0.0, at: $0.1) }, on: sql)
                return inserted.count
            }
            guard let database = sql as? any Database else { return try await write(sql) }
            return try await database.transaction { database in
                guard let sql = database as? any SQLDatabase else { throw BackplaneError.storage("the backplane needs an SQL database") }
                return try await write(sql)
            }
        } catch {
            throw .storage("cannot keep the events: \(String(describing: error).prefix(200))")
        }
    }

    public func events(_ query: EventQuery, limit: Int) async throws(BackplaneError) -> [RecordedEvent] {
        do {
            let rows = try await Self.filtered(sql.select().columns("*").from(Self.table), query)
                .orderBy("at", .descending).orderBy("ordinal", .descending).limit(max(0, min(limit, 100_000))).all()
            return try rows.map(Self.event)
        } catch {
            throw .storage("cannot read the events: \(String(describing: error).prefix(200))")
        }
    }

    public func events(_ query: EventQuery, page: ListingRequest) async throws(BackplaneError) -> ListingPage<RecordedEvent> {
        var select = Self.filtered(sql.select().columns("*").from(Self.table), query)
        if let after = page.afterKey {
            guard let ordinal = Int64(after[0]) else { throw .badRequest("the cursor (after) is not one of the events listing") }
            select = select.where(SQLBinaryExpression(SQLGroupExpression([SQLIdentifier("ordinal"), SQLIdentifier("record_id")]), .lessThan,
                                                      SQLGroupExpression([SQLBind(ordinal), SQLBind(after[1])])))
        }
        do {
            let rows = try await select.orderBy("ordinal", .descending).orderBy("record_id", .descending).limit(page.limit + 1).all()
            let keyed = try rows.map { row in (try Self.event(row), [String(try row.decode(column: "ordinal", as: Int64.self)), try row.decode(column: "record_id", as: String.self)]) }
            let items = keyed.prefix(page.limit)
            return ListingPage(items: items.map(\.0), next: keyed.count > page.limit ? items.last.map { ListingCursor(listing: RecordedEvent.listing, key: $0.1).encoded } : nil)
        } catch {
            throw .storage("cannot read the events: \(String(describing: error).prefix(200))")
        }
    }

    /// An event as a row of the table holds it.
    static func event(_ row: any SQLRow) throws -> RecordedEvent {
        let device = try row.decode(column: "device_id", as: String.self)
        let record = try row.decode(column: "record_id", as: String.self)
        let event = DeviceEvent(eventID: String(record.dropFirst(device.count + 1)),
                                kind: DeviceEventKind(rawValue: try row.decode(column: "kind", as: String.self)) ?? .downloadError,
                                time: try row.decode(column: "at", as: Date.self), assetID: try row.decode(column: "asset_id", as: String?.self),
                                reason: try row.decode(column: "reason", as: String?.self), seconds: try row.decode(column: "seconds", as: Double?.self),
                                detail: try row.decode(column: "detail", as: String?.self))
        return RecordedEvent(event: event, deviceID: device, user: try row.decode(column: "user_id", as: String.self),
                             received: try row.decode(column: "received_at", as: Date.self))
    }

    public func perHour(_ kinds: [DeviceEventKind], hours: [Date]) async throws(BackplaneError) -> [DeviceEventKind: [Int]] {
        do {
            let counts = try await Rollups.counts(kinds.map { "event:" + $0.rawValue }, hours: hours, on: sql)
            return Dictionary(uniqueKeysWithValues: kinds.map { ($0, counts["event:" + $0.rawValue] ?? Array(repeating: 0, count: hours.count)) })
        } catch {
            throw .storage("cannot read the hourly counts: \(String(describing: error).prefix(200))")
        }
    }

    public func counts(_ query: EventQuery, by grouping: EventGrouping, limit: Int) async throws(BackplaneError) -> [EventCount] {
        let column: any SQLExpression = switch grouping {
        case .kind: SQLIdentifier("kind")
        case .user: SQLIdentifier("user_id")
        case .device: SQLIdentifier("device_id")
        case .asset: SQLFunction("COALESCE", args: SQLIdentifier("asset_id"), SQLLiteral.string(""))
        case .reason: SQLFunction("COALESCE", args: SQLIdentifier("reason"), SQLLiteral.string(""))
        }
        do {
            let newest = Self.filtered(sql.select().columns("*").from(Self.table), query).orderBy("at", .descending).limit(EventRules.countedEvents)
            let rows = try await sql.select().column(SQLAlias(column, as: SQLIdentifier("group_key")))
                .column(SQLAlias(SQLFunction("COUNT", args: SQLLiteral.all), as: SQLIdentifier("n")))
                .from(SQLAlias(SQLGroupExpression(newest.select), as: SQLIdentifier("newest")))
                .groupBy(column).orderBy("n", .descending).orderBy("group_key").limit(max(0, min(limit, 100_000))).all()
            return try rows.map { EventCount(grouping: grouping, key: try $0.decode(column: "group_key", as: String.self), count: try $0.decode(column: "n", as: Int.self)) }
        } catch {
            throw .storage("cannot count the events: \(String(describing: error).prefix(200))")
        }
    }

    /// `select` narrowed by every field `query` sets.
    static func filtered(_ select: SQLSelectBuilder, _ query: EventQuery) -> SQLSelectBuilder {
        var select = select
        if let device = query.device { select = select.where("device_id", .equal, device) }
        if let user = query.user { select = select.where("user_id", .equal, user) }
        if let kind = query.kind { select = select.where("kind", .equal, kind.rawValue) }
        if let asset = query.asset { select = select.where("asset_id", .equal, asset) }
        if let since = query.since { select = select.where("at", .greaterThanOrEqual, since) }
        if let until = query.until { select = select.where("at", .lessThan, until) }
        return select
    }
}

/// The devices' events: their table and indexes (by time, by user and time, by kind and time).
public struct AddDeviceEvents: AsyncMigration {
    /// The migration.
    public init() {}

    public func prepare(on database: any Database) async throws {
        try await database.schema(FluentEventStore.table)
            .field("record_id", .string, .identifier(auto: false))
            .field("device_id", .string, .required).field("user_id", .string, .required).field("kind", .string, .required)
            .field("asset_id", .string).field("reason", .string).field("seconds", .double).field("detail", .string)
            .field("at", .datetime, .required).field("received_at", .datetime, .required).field("ordinal", .int64, .required)
            .create()
        guard let sql = database as? any SQLDatabase else { return }
        for (name, columns) in [("backplane_events_at", ["at"]), ("backplane_events_user_at", ["user_id", "at"]), ("backplane_events_kind_at", ["kind", "at"])] {
            var index = sql.create(index: name).on(FluentEventStore.table)
            for column in columns { index = index.column(column) }
            try await index.run()
        }
    }

    public func revert(on database: any Database) async throws {
        try await database.schema(FluentEventStore.table).delete()
    }
}

extension RecordedEvent {
    /// The events listing's name in its cursors.
    public static let listing = "events"
}
