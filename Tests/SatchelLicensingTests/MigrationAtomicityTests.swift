import FluentKit
import Foundation
import SQLKit
import SatchelLicensing
import Testing

/// Issue 47: a store's migrations each run in one transaction with their log row. A process killed, or a statement
/// failing, partway through one leaves none of it behind; FluentKit's migrator left what had run (a store killed in its
/// first opening could not be opened again: `table … already exists`).
@Suite("Migrations")
struct MigrationAtomicityTests {
    static let postgres = ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"]

    /// A migration of two statements that fails between them (as a kill would stop it), or runs whole.
    struct TwoSteps: AsyncMigration {
        struct Stopped: Error {}
        let name: String, table: String, fails: Bool

        func prepare(on database: any Database) async throws {
            guard let sql = database as? any SQLDatabase else { return }
            try await sql.raw("CREATE TABLE \(ident: table) (id BIGINT PRIMARY KEY)").run()
            if fails { throw Stopped() }
            try await sql.raw("INSERT INTO \(ident: table) (id) VALUES (1)").run()
        }

        func revert(on database: any Database) async throws {}
    }

    @Test("a migration stopped after its first statement leaves nothing behind: the next opening runs it whole and logs it once (SQLite and PostgreSQL)",
          arguments: [nil] + (postgres.map { [$0] } ?? []))
    func stoppedMidway(url: String?) async throws {
        let directory = NSTemporaryDirectory() + "satchel-migrations-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let (name, table) = ("test-two-steps-\(suffix)", "test_two_steps_\(suffix)")
        do {
            let database = try await LicensingDatabase(dataDirectory: directory, url: url, more: [TwoSteps(name: name, table: table, fails: true)])
            await database.shutdown()
            Issue.record("the failing migration did not fail")
        } catch {
            #expect(!"\(error)".contains("already exists"), "\(error)")
        }
        try await Self.withDatabase(directory, url: url, more: [TwoSteps(name: name, table: table, fails: false)]) { database in
            let sql = try database.sql()
            let rows = try await sql.raw("SELECT COUNT(*) AS n FROM \(ident: table)").first()?.decode(column: "n", as: Int.self)
            let logged = try await sql.raw("SELECT COUNT(*) AS n FROM _fluent_migrations WHERE name = \(bind: name)").first()?.decode(column: "n", as: Int.self)
            #expect(rows == 1, "the migration ran whole at the second opening")
            #expect(logged == 1)
            if url != nil {
                try await sql.raw("DROP TABLE \(ident: table)").run()
                try await sql.raw("DELETE FROM _fluent_migrations WHERE name = \(bind: name)").run()
            }
        }
    }

    @Test("a migration already logged does not run again; one added later runs at the next opening, in a batch after the first")
    func loggedOnce() async throws {
        let directory = NSTemporaryDirectory() + "satchel-migrations-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = TwoSteps(name: "first", table: "test_first", fails: false), second = TwoSteps(name: "second", table: "test_second", fails: false)
        await (try await LicensingDatabase(dataDirectory: directory, url: nil, more: [first])).shutdown()
        // Run again, the first would fail on its table (and its row's key).
        try await Self.withDatabase(directory, url: nil, more: [first, second]) { database in
            let rows = try await database.sql().raw("SELECT name, batch FROM _fluent_migrations WHERE name IN ('first', 'second') ORDER BY batch").all()
            let batches = try rows.map { (try $0.decode(column: "name", as: String.self), try $0.decode(column: "batch", as: Int.self)) }
            #expect(batches.map(\.0) == ["first", "second"])
            #expect(batches.count == 2 && batches[1].1 == batches[0].1 + 1)
        }
    }

    /// Runs `body` on the store opened in `directory` (or the PostgreSQL database at `url`) with `more` migrations,
    /// closed afterwards whatever happens.
    static func withDatabase(_ directory: String, url: String?, more: [any Migration], _ body: (LicensingDatabase) async throws -> Void) async throws {
        try await LicensingDatabase(dataDirectory: directory, url: url, more: more).using(body)
    }
}
