import FluentKit
import SQLKit

/// The row locks the backplane's store takes so that its limits hold across nodes, and the notices it sends them.
enum BackplaneRowLocks {
    /// Takes the user's row (creating it), so that the user's counts do not move until this transaction ends.
    static func user(_ user: String, on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { throw BackplaneError.storage("the backplane needs an SQL database") }
        try await sql.raw("INSERT INTO \(ident: BackplaneUserModel.schema) (user_id) VALUES (\(bind: user)) ON CONFLICT (user_id) DO NOTHING").run()
        if sql.dialect.name == "postgresql" {
            try await sql.raw("SELECT user_id FROM \(ident: BackplaneUserModel.schema) WHERE user_id = \(bind: user) FOR UPDATE").run()
        }
    }

    /// Takes the document `name`'s row (creating it empty), so that two changes of it go one after the other.
    static func document(_ name: String, on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { throw BackplaneError.storage("the backplane needs an SQL database") }
        try await sql.raw("INSERT INTO \(ident: BackplaneDocumentModel.schema) (name, body) VALUES (\(bind: name), '{}') ON CONFLICT (name) DO NOTHING").run()
        if sql.dialect.name == "postgresql" {
            try await sql.raw("SELECT name FROM \(ident: BackplaneDocumentModel.schema) WHERE name = \(bind: name) FOR UPDATE").run()
        }
    }

    /// On PostgreSQL, notifies the other nodes (``PostgresWakeListener``) of `payload` (``BackplaneWakeHub/wake(payload:)``):
    /// sent when the transaction commits, never for one rolled back. One node (SQLite) needs no notice.
    static func notify(_ payload: String, on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase, sql.dialect.name == "postgresql" else { return }
        try await sql.raw("SELECT pg_notify(\(bind: BackplaneWakeHub.channel), \(bind: payload))").run()
    }

}
