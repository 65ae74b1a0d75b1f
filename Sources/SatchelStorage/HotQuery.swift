import SQLKit

/// A statement that a device's or a player's request runs, named so that a test and the scale benchmark can ask the
/// database how it would run it. Every hot query reads a bounded number of rows through an index, whatever the
/// size of the catalogue, the audience or the history.
public struct HotQuery: Sendable {
    /// What the statement does, in a few words ("keys of an asset").
    public var name: String
    /// The statement, with example binds.
    public var sql: SQLQueryString

    /// A named statement.
    public init(_ name: String, _ sql: SQLQueryString) {
        self.name = name
        self.sql = sql
    }
}

/// How a database would run a statement, read from its own plan (SQLite's `EXPLAIN QUERY PLAN`, PostgreSQL's
/// `EXPLAIN`), and the tables such a plan reads whole.
package enum QueryPlan {
    /// The lines of the database's plan for `query` (nothing is run).
    package static func lines(_ query: SQLQueryString, on sql: any SQLDatabase) async throws -> [String] {
        if sql.dialect.name == "postgresql" {
            return try await sql.raw("EXPLAIN \(query)").all().map { try $0.decode(column: "QUERY PLAN", as: String.self) }
        }
        return try await sql.raw("EXPLAIN QUERY PLAN \(query)").all().map { try $0.decode(column: "detail", as: String.self) }
    }

    /// Where a listing's plan (`lines`, of `dialect`) reads more than its page: a table of `growing` read whole, or every
    /// matching row sorted before the first is given (SQLite's `USE TEMP B-TREE FOR ORDER BY`, PostgreSQL's `Sort`
    /// node). An index walked in order (`SCAN table USING INDEX`) stops at the page's limit.
    package static func unbounded(in lines: [String], of growing: Set<String>, dialect: String) -> [String] {
        var found: [String] = []
        for line in lines {
            let text = line.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "->  ", with: "")
            if dialect == "postgresql" {
                found += scans(in: [line], of: growing, dialect: dialect)
                if text.hasPrefix("Sort  (") || text.hasPrefix("Sort (") { found.append("a sort of every matching row") }
            } else {
                let words = text.split(separator: " ").map(String.init)
                if words.count >= 2, words[0] == "SCAN", growing.contains(words[1]), !text.contains("USING") { found.append(words[1]) }
                if text.contains("USE TEMP B-TREE FOR ORDER BY") { found.append("a sort of every matching row") }
            }
        }
        return found
    }

    /// The table of `growing` that `name` is a monthly partition of (``MonthlyPartitions``), or `name`.
    static func parent(of name: String, in growing: Set<String>) -> String {
        for suffix in ["_default"] + (name.count > 8 ? [String(name.suffix(8))] : []) where name.hasSuffix(suffix) {
            let base = String(name.dropLast(suffix.count))
            if growing.contains(base), suffix == "_default" || MonthlyPartitions.Month.parse(name, of: base) != nil { return base }
        }
        return name
    }

    /// The tables of `growing` that `lines` (a plan of `dialect`) read whole: SQLite's `SCAN table` (with or without an
    /// index: a walk of a whole index grows with its table too), PostgreSQL's `Seq Scan on table`.
    package static func scans(in lines: [String], of growing: Set<String>, dialect: String) -> [String] {
        var found: [String] = []
        for line in lines {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            for (index, word) in words.enumerated() {
                let table: String?
                if dialect == "postgresql" {
                    table = word == "Seq" && index + 3 < words.count && words[index + 1] == "Scan" && words[index + 2] == "on" ? words[index + 3] : nil
                } else {
                    table = word == "SCAN" && index + 1 < words.count ? words[index + 1] : nil
                }
                if let table = table.map({ parent(of: $0, in: growing) }), growing.contains(table), !found.contains(table) { found.append(table) }
            }
        }
        return found
    }
}
