import FluentKit
import Foundation
import SQLKit
@testable import SatchelLicensing
import Testing

/// Issue 47: licenses issued faster than the database takes their records (a server under sustained load) wait for
/// room in the audit journal, so issuing slows to the database's pace; only a database that takes nothing for long
/// gets them refused. Before, the first record past the journal's limit was refused at once.
@Suite("Audit back-pressure")
struct AuditBackPressureTests {
    static func entry(_ index: Int) -> AuditLog.LicenseEntry {
        AuditLog.LicenseEntry(assetID: "film-\(index)", keyID: String(repeating: "ab", count: 16), subject: "user-\(index)", type: "clearkey-temporary",
                              customData: nil, issuedAt: Date())
    }

    /// A SQLite store and an audit log over its audit file with a journal of `limit` records in a folder of its own.
    static func withLog(limit: Int, roomWait: Duration, _ body: (AuditLog, any SQLDatabase) async throws -> Void) async throws {
        let directory = try AuditJournalTests.directory("room"), journals = try AuditJournalTests.directory("room-journal")
        defer { for path in [directory, journals] { try? FileManager.default.removeItem(atPath: path) } }
        let database = try await LicensingDatabase(dataDirectory: directory, url: nil)
        do {
            let journal = try #require(try AuditJournal.claim(directory: journals, limit: limit))
            defer { journal.release() }
            try await body(AuditLog(database: database.audit.database, journal: journal, roomWait: roomWait), try database.auditSQL())
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }

    static func rows(_ sql: any SQLDatabase) async throws -> Int? {
        try await sql.raw("SELECT COUNT(*) AS n FROM satchel_licenses").first()?.decode(column: "n", as: Int.self)
    }

    @Test("300 licenses at once through a journal of 20 records: every one is recorded, none refused (each waits for a fold to make room)")
    func waitsForRoom() async throws {
        try await Self.withLog(limit: 20, roomWait: .seconds(30)) { log, sql in
            let refused = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<300 { group.addTask { (try? await log.record(Self.entry(index))) == nil ? 1 : 0 } }
                return try await group.reduce(0, +)
            }
            #expect(refused == 0)
            try await log.flush()
            #expect(try await Self.rows(sql) == 300)
        }
    }

    @Test("a database that takes nothing: past the journal's limit a license waits, then is refused with a clear error; once the database is back the next one waits for the records kept to be written, and is recorded")
    func refusedThenResumed() async throws {
        try await Self.withLog(limit: 20, roomWait: .milliseconds(400)) { log, sql in
            try await sql.raw("ALTER TABLE satchel_licenses RENAME TO satchel_licenses_away").run()
            for index in 0..<20 { try await log.record(Self.entry(index)) }
            let clock = ContinuousClock(), start = clock.now
            await #expect(throws: LicensingError.storage("the audit journal is full: the database has not taken its records")) {
                try await log.record(Self.entry(20))
            }
            #expect(start.duration(to: clock.now) >= .milliseconds(400), "it waited for room first")
            try await sql.raw("ALTER TABLE satchel_licenses_away RENAME TO satchel_licenses").run()
            // No fold is under way (the last one failed, and a full journal asks for none): the waiting record starts one.
            try await log.record(Self.entry(21))
            try await log.flush()
            #expect(try await Self.rows(sql) == 21)
        }
    }
}
