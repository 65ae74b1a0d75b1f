import FluentKit
import SQLKit

/// A SQLite file's migration that moves rows in from the store's main file: the main file attached as `store` on one
/// connection of `database` for `body`, and detached again whatever happens. Outside a transaction (SQLite attaches a
/// file only outside one): the migration is a ``RunsOutsideATransaction`` and its steps safe to run again.
package enum AttachedStore {
    /// Runs `body` with the file at `path` attached as `store` (`store.TABLE` in its statements; the file's own tables
    /// are `main.TABLE`).
    package static func with(_ path: String, on database: any Database, _ body: @escaping @Sendable (any SQLDatabase) async throws -> Void) async throws {
        try await database.withConnection { connection in
            guard let sql = connection as? any SQLDatabase else { return }
            try await sql.raw("ATTACH DATABASE \(bind: path) AS store").run()
            do {
                try await body(sql)
            } catch {
                try? await sql.raw("DETACH DATABASE store").run()
                throw error
            }
            try await sql.raw("DETACH DATABASE store").run()
        }
    }
}
