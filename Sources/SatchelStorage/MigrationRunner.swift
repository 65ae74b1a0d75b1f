import FluentKit

/// A migration that cannot run inside a transaction (SQLite cannot attach another file in one). It must be safe to
/// run again: a process killed partway through it, or between it and its log row, runs it again at the next opening.
package protocol RunsOutsideATransaction {}

/// Runs the migrations a store has not logged, in order, each in one transaction with its row in FluentKit's
/// migration log (`_fluent_migrations`, which earlier stores already hold). A process killed, or a statement failing,
/// partway through a migration therefore leaves none of it behind, and the next opening runs it whole; FluentKit's own
/// migrator logs a migration after its statements, outside any transaction, so a kill between the two left a store
/// that could not be opened again (`table … already exists`).
enum MigrationRunner {
    /// Runs the migrations of `migrations` not yet in the log on `database` (the migration log made first when the
    /// store is new). Those run at one opening share a batch number, as FluentKit's migrator numbers them.
    static func run(_ migrations: [any Migration], on database: any Database) async throws {
        try await MigrationLog.migration.prepare(on: database).get()
        let logged = Set(try await MigrationLog.query(on: database).all(\.$name))
        let pending = migrations.filter { !logged.contains($0.name) }
        guard !pending.isEmpty else { return }
        let batch = (try await MigrationLog.query(on: database).max(\.$batch) ?? 0) + 1
        for migration in pending {
            guard !(migration is any RunsOutsideATransaction) else {
                try await migration.prepare(on: database).get()
                try await MigrationLog(name: migration.name, batch: batch).create(on: database)
                continue
            }
            try await database.transaction { transaction in
                // Another process opening the same SQLite file may have run it since the log was read.
                guard try await MigrationLog.query(on: transaction).filter(\.$name == migration.name).first() == nil else { return }
                try await migration.prepare(on: transaction).get()
                try await MigrationLog(name: migration.name, batch: batch).create(on: transaction)
            }
        }
    }
}
