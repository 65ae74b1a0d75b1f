import FluentSQLiteDriver
import Foundation

/// The audit's INSERTs for SQLite, written as SQL with positional parameters and bound as SQLite values: the journal's
/// folds write thousands of rows a second, and SQLKit's builder encodes each value through `Encodable`. The values are
/// those FluentKit stores for the models (`LicenseModel`, `SyncModel`): the ID as its text, times as seconds since 1970.
enum AuditSQLite {
    /// Rows per statement (7 values each, far under SQLite's limit on parameters).
    static let rowsPerStatement = 500

    /// Multi-row INSERTs for the records; a row already there (a record folded again after a crash) is left as it is. A
    /// license statement answers the rows it inserted (type, time), which the roll-ups count.
    static func inserts(_ licenses: [AuditLog.LicenseEntry], _ syncs: [AuditLog.SyncEntry]) -> [(sql: String, binds: [SQLiteData])] {
        var statements: [(sql: String, binds: [SQLiteData])] = []
        for start in stride(from: 0, to: licenses.count, by: rowsPerStatement) {
            let rows = licenses[start..<min(start + rowsPerStatement, licenses.count)]
            var binds: [SQLiteData] = []
            binds.reserveCapacity(rows.count * 7)
            for entry in rows {
                binds += [.text(entry.id.uuidString), .text(entry.assetID), .text(entry.keyID), .text(entry.subject), .text(entry.type),
                          .float(entry.issuedAt.timeIntervalSince1970), entry.customData.map { .text($0) } ?? .null]
            }
            statements.append((statement(LicenseModel.schema, ["id", "asset_id", "key_id", "subject", "type", "issued_at", "custom_data"], rows.count)
                                   + " RETURNING type, issued_at", binds))
        }
        for start in stride(from: 0, to: syncs.count, by: rowsPerStatement) {
            let rows = syncs[start..<min(start + rowsPerStatement, syncs.count)]
            var binds: [SQLiteData] = []
            for entry in rows {
                binds += [.text(entry.id.uuidString), .text(entry.contentID), .integer(Int(entry.durationToExpiry)), .text(entry.subject),
                          .float(entry.receivedAt.timeIntervalSince1970)]
            }
            statements.append((statement(SyncModel.schema, ["id", "content_id", "duration_to_expiry", "subject", "received_at"], rows.count), binds))
        }
        return statements
    }

    /// `INSERT INTO "table" ("a", …) VALUES (?, …), … ON CONFLICT DO NOTHING` (the names are the schema's own).
    private static func statement(_ table: String, _ columns: [String], _ rows: Int) -> String {
        let row = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        return "INSERT INTO \"\(table)\" (" + columns.map { "\"\($0)\"" }.joined(separator: ", ") + ") VALUES "
            + Array(repeating: row, count: rows).joined(separator: ", ") + " ON CONFLICT DO NOTHING"
    }
}
