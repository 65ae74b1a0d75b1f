import Foundation
import SQLKit
import SatchelLicensing
import Testing

/// Issue 48: a SQLite store waits for another process's lock by sleeping (`busy_timeout`; the driver's own handler
/// retries at once, for ever, spinning a thread), writes ahead, and syncs as its durability argument says.
@Suite("SQLite settings")
struct SQLiteSettingsTests {
    @Test("the license store's SQLite file: a 5 s busy timeout, write-ahead logging, synced at checkpoints (NORMAL)")
    func licenseStore() async throws {
        let directory = NSTemporaryDirectory() + "satchel-sqlite-settings-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = try await LicensingDatabase(dataDirectory: directory, url: nil)
        do {
            let sql = try database.sql()
            func pragma(_ name: String) async throws -> String? {
                guard let row = try await sql.raw("PRAGMA \(unsafeRaw: name)").first(), let column = row.allColumns.first else { return nil }
                return (try? row.decode(column: column, as: String.self)) ?? (try? row.decode(column: column, as: Int.self)).map(String.init)
            }
            #expect(try await pragma("busy_timeout") == "5000")
            #expect(try await pragma("journal_mode") == "wal")
            #expect(try await pragma("synchronous") == "1", "NORMAL")
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }
}
