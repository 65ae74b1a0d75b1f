import FluentKit
import Foundation
import SQLKit

/// Counts per hour kept as records arrive (`satchel_rollups`: the hour's start in seconds since 1970, a series such as
/// `license:fairplay` or `event:play-start`, one of ``slots`` places, a count), written in the same transaction as the
/// rows they count, so the dashboard's charts read a few rows an hour instead of a day of raw history, and always equal
/// a count of those rows. Each transaction adds to one place chosen at random: concurrent writers (several nodes, every
/// device's event batch) do not all wait for the lock of one row, and a read sums the places.
public enum Rollups {
    /// The table.
    public static let table = "satchel_rollups"

    /// The start of `date`'s hour, in seconds since 1970.
    public static func hour(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / 3600).rounded(.down)) * 3600
    }

    /// The places each hour and series is counted in.
    public static let slots = 8

    /// Adds `counts` (by hour start and series) to the roll-ups, on `sql` (the caller's transaction).
    public static func add(_ counts: [Bucket: Int], on sql: any SQLDatabase) async throws {
        guard !counts.isEmpty else { return }
        let slot = Int64.random(in: 0..<Int64(slots))
        let rows = counts.sorted { ($0.key.hour, $0.key.series) < ($1.key.hour, $1.key.series) }
            .map { SQLGroupExpression([SQLBind($0.key.hour), SQLBind($0.key.series), SQLBind(slot), SQLBind(Int64($0.value))] as [any SQLExpression]) }
        for start in stride(from: 0, to: rows.count, by: 500) {
            try await sql.raw("""
                INSERT INTO satchel_rollups (hour, series, slot, count) VALUES \(SQLList(Array(rows[start..<min(start + 500, rows.count)])))
                ON CONFLICT (hour, series, slot) DO UPDATE SET count = satchel_rollups.count + excluded.count
                """).run()
        }
    }

    /// The counts of `series` for each hour of `hours` (hour starts, oldest first; an hour without a row counts 0).
    public static func counts(_ series: [String], hours: [Date], on sql: any SQLDatabase) async throws -> [String: [Int]] {
        guard let first = hours.first, let last = hours.last, !series.isEmpty else { return [:] }
        let rows = try await sql.raw("""
            SELECT hour, series, CAST(SUM(count) AS BIGINT) AS count FROM satchel_rollups WHERE series IN (\(binds: series.map { $0 as any Encodable & Sendable })) AND hour >= \(bind: hour(of: first))
            AND hour <= \(bind: hour(of: last)) GROUP BY hour, series
            """).all()
        var counts = Dictionary(uniqueKeysWithValues: series.map { ($0, Array(repeating: 0, count: hours.count)) })
        for row in rows {
            let slot = Int((try row.decode(column: "hour", as: Int64.self) - hour(of: first)) / 3600)
            let name = try row.decode(column: "series", as: String.self)
            if slot >= 0, slot < hours.count { counts[name]?[slot] += try row.decode(column: "count", as: Int.self) }
        }
        return counts
    }

    /// One count's place: an hour and a series.
    public struct Bucket: Hashable, Sendable {
        /// The hour's start, seconds since 1970.
        public var hour: Int64
        /// What is counted.
        public var series: String

        /// The bucket of `series` at `date`'s hour.
        public init(_ series: String, at date: Date) {
            self.hour = Rollups.hour(of: date)
            self.series = series
        }
    }

    /// The counts of `entries` by bucket.
    public static func tally<S: Sequence>(_ entries: S, _ bucket: (S.Element) -> Bucket) -> [Bucket: Int] {
        var counts: [Bucket: Int] = [:]
        for entry in entries { counts[bucket(entry), default: 0] += 1 }
        return counts
    }
}

/// Creates the roll-up table when it is not there (the license service's and the backplane's migrations both run it,
/// under their own names: either may open the database first).
public struct CreateRollups: AsyncMigration {
    /// The migration's name in the log.
    public let name: String

    /// A migration logged under `name`.
    public init(name: String) {
        self.name = name
    }

    public func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.raw("""
            CREATE TABLE IF NOT EXISTS satchel_rollups (hour BIGINT NOT NULL, series TEXT NOT NULL, slot BIGINT NOT NULL, count BIGINT NOT NULL,
            PRIMARY KEY (hour, series, slot))
            """).run()
    }

    public func revert(on database: any Database) async throws {}
}
