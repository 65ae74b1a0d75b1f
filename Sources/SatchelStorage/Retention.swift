import Foundation
import SQLKit

/// History that grows forever kept for a while: on PostgreSQL the months wholly older than a cutoff dropped
/// (``MonthlyPartitions``); then rows older than the cutoff deleted in small batches through the index on their time (each batch its own short statement, so a sweep never holds the database for long), and the hourly
/// roll-ups of the hours deleted with them (the cutoff is an hour's start: the charts still equal a count of the rows).
public enum Retention {
    /// One kind of history: its table (key and indexed time) and the roll-up series that count it.
    public struct History: Sendable {
        /// The table.
        public var table: MonthlyPartitions.Table
        /// A `LIKE` pattern of the roll-up series that count its rows, or nil.
        public var rollups: String?

        /// A kind of history.
        public init(_ table: MonthlyPartitions.Table, rollups: String?) {
            (self.table, self.rollups) = (table, rollups)
        }
    }

    /// Rows one statement deletes.
    public static let batch = 1_000

    /// The cutoff for keeping `days` days at `now`: the start of the hour `days` days ago.
    public static func cutoff(days: Int, at now: Date) -> Date {
        Date(timeIntervalSince1970: Double(Rollups.hour(of: now.addingTimeInterval(-Double(days) * 86_400))))
    }

    /// Deletes `history`'s rows older than `cutoff` (and their roll-ups), a batch at a time; answers how many rows went.
    @discardableResult
    public static func sweep(_ history: History, before cutoff: Date, on sql: any SQLDatabase) async throws -> Int {
        var deleted = try await MonthlyPartitions.drop(history.table, before: cutoff, on: sql)
        let (table, key, time) = (history.table.name, history.table.key, history.table.time)
        while true {
            try Task.checkCancellation()
            let rows = try await sql.raw("""
                DELETE FROM \(ident: table) WHERE \(ident: time) < \(bind: cutoff) AND \(ident: key) IN
                (SELECT \(ident: key) FROM \(ident: table) WHERE \(ident: time) < \(bind: cutoff) LIMIT \(literal: batch))
                RETURNING \(ident: key)
                """).all()
            deleted += rows.count
            if rows.count < batch { break }
            await Task.yield()
        }
        if let series = history.rollups {
            try await sql.raw("DELETE FROM satchel_rollups WHERE hour < \(bind: Rollups.hour(of: cutoff)) AND series LIKE \(bind: series)").run()
        }
        return deleted
    }
}
