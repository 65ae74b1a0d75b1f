import Foundation
import SQLKit
@testable import SatchelLicensing
import Testing

/// A node's PostgreSQL handle serves its requests on several connections at once: with FluentKit's default of one
/// connection per event loop (the handle is bound to one loop), every request of a node queued behind the others'.
@Suite("PostgreSQL pool")
struct PostgresPoolTests {
    static let url = ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"]

    @Test("four queries at once run on four connections (PostgreSQL's own count of them, while they run)", .enabled(if: url != nil))
    func concurrentConnections() async throws {
        let url = try #require(Self.url)
        let directory = NSTemporaryDirectory() + "satchel-pg-pool-\(UUID().uuidString)"
        let database = try await LicensingDatabase(dataDirectory: directory, url: url)
        let sql = try database.sql()
        let marker = "satchel_pool_\(Int.random(in: 0..<1_000_000_000))"
        let running: Int
        do {
            running = try await withThrowingTaskGroup(of: Int?.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        // The marker in a comment names these sessions in pg_stat_activity.
                        try await sql.raw("SELECT pg_sleep(1.5) /* \(unsafeRaw: marker) */").run()
                        return nil
                    }
                }
                group.addTask {
                    // While they sleep, a fifth query of the same handle counts the sleeping sessions, again and again (a
                    // loaded machine may start one late); the most seen at once is the answer. With a pool of one it would
                    // run only after them, and find none.
                    var most = 0
                    for _ in 0..<12 {
                        try await Task.sleep(for: .milliseconds(100))
                        let rows = try await sql.raw("""
                            SELECT count(*) AS n FROM pg_stat_activity WHERE query LIKE \(bind: "%" + marker + "%") AND query NOT LIKE '%pg_stat_activity%'
                            """).all()
                        most = max(most, try rows.first?.decode(column: "n", as: Int.self) ?? 0)
                        if most == 4 { break }
                    }
                    return most
                }
                var count = 0
                for try await value in group { if let value { count = value } }
                return count
            }
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
        #expect(running == 4, "\(running) of 4 concurrent queries ran at once")
    }
}
