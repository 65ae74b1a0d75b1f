import SQLKit

/// A table's row count for a dashboard: exact while the table is small, the database's own estimate once it is large
/// (PostgreSQL's statistics, SQLite's highest row ID), so a page view never counts a large table.
package enum TableSize {
    /// Rows counted exactly, at most.
    package static let countedRows = 10_000

    /// About how many rows `table` holds (a name from the code, never from a client).
    package static func estimate(_ table: String, on sql: any SQLDatabase) async throws -> Int {
        let counted = try await sql.raw("SELECT COUNT(*) AS n FROM (SELECT 1 FROM \(ident: table) LIMIT \(literal: countedRows)) AS counted")
            .first()?.decode(column: "n", as: Int.self) ?? 0
        guard counted >= countedRows else { return counted }
        let estimate: Int?
        if sql.dialect.name == "postgresql" {
            estimate = try await sql.raw("SELECT reltuples::bigint AS n FROM pg_class WHERE relname = \(bind: table)").first()?
                .decode(column: "n", as: Int?.self)
        } else {
            estimate = try await sql.raw("SELECT MAX(rowid) AS n FROM \(ident: table)").first()?.decode(column: "n", as: Int?.self)
        }
        return max(counted, estimate ?? 0)
    }
}
