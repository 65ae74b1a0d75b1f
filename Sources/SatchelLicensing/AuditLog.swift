import FluentKit
import FluentSQLiteDriver
import Foundation
import SatchelStorage
import Logging
import SQLKit
import SatchelBytes
import SatchelSystem

/// The audit log with group commit: a license is answered only once its record is durable. Requests
/// that arrive while a transaction is being written wait for the next one, which writes all of them
/// together; so the cost of a commit is shared by every license issued meanwhile (a few milliseconds of
/// waiting under load, one transaction per batch instead of one per license).
///
/// The first request to find no transaction in flight writes the batch itself; when it is done it hands
/// the next batch to the first request waiting in it. No task runs in the background.
///
/// With an `AuditJournal` (a SQLite store's owner process) a record is durable once appended to the journal, and
/// the database takes the journal's records in batches behind the answers (a fold, started by the append that finds
/// none under way, at most every 250 ms); readers fold what is pending before they read.
public actor AuditLog {
    /// One issued license, as recorded.
    struct LicenseEntry: Sendable, Equatable {
        var id = SecureRandom.uuidV7()
        let assetID, keyID, subject, type: String
        let customData: String?
        let issuedAt: Date
    }

    /// One sync report, as recorded.
    struct SyncEntry: Sendable, Equatable {
        var id = SecureRandom.uuidV7()
        let contentID: String
        let durationToExpiry: Int64
        let subject: String
        let receivedAt: Date
    }

    /// What a waiting request learns when its batch has been dealt with.
    private enum Outcome {
        case committed
        case failed(any Error)
        case lead
    }

    /// Where the audit is written and read: on SQLite a file of its own (`AuditFile`).
    let database: any Database
    private let journal: AuditJournal?
    /// A fold is under way (journal mode); `foldEnded` wait for it.
    private var folding = false
    private var foldEnded: [CheckedContinuation<Void, Never>] = []
    /// The folds behind the answers are running (one at a time, each ``foldInterval`` after ``lastFold`` began).
    private var foldsRunning = false
    private var lastFold = ContinuousClock.now - AuditLog.foldInterval
    /// The first failure of a run of failed folds was logged.
    private var failureLogged = false
    // Plain values here; Fluent models (reflection-heavy) are never built for the audit.
    private var licenses: [LicenseEntry] = []
    private var syncs: [SyncEntry] = []
    private var waiters: [CheckedContinuation<Outcome, Never>] = []
    private var writing = false
    /// Records written so far.
    public private(set) var written = 0
    /// Transactions written so far (records / transactions = the group-commit batch size).
    public private(set) var transactions = 0

    /// How long a record waits for room in a full journal before its license is refused: licenses issued faster than
    /// the database takes their records wait for the folds (issuing slows to the database's pace) rather than fail; a
    /// database that takes nothing for this long fails them.
    let roomWait: Duration

    init(database: any Database, journal: AuditJournal? = nil, roomWait: Duration = .seconds(5)) {
        (self.database, self.journal, self.roomWait) = (database, journal, roomWait)
        if journal?.needsFold() == true { Task { await self.fold() } }  // what a previous process left
    }

    /// Records a license; returns when the record is durable, throws when it could not be written.
    nonisolated func record(_ license: LicenseEntry) async throws {
        if let journal { return try await append(.license(license), to: journal) }
        try await commit(license: license)
    }

    /// Records a sync report; returns when the record is durable.
    nonisolated func record(_ sync: SyncEntry) async throws {
        if let journal { return try await append(.sync(sync), to: journal) }
        try await commit(sync: sync)
    }

    private nonisolated func append(_ record: AuditRecord, to journal: AuditJournal) async throws {
        let deadline = ContinuousClock.now + roomWait
        while true {
            switch try journal.append(record) {
            case let .kept(foldWanted):
                if foldWanted { Task { await self.fold() } }
                return
            case .full:
                guard ContinuousClock.now < deadline else { throw LicensingError.storage("the audit journal is full: the database has not taken its records") }
                await roomMade()
            }
        }
    }

    /// Returns when the fold under way ends; with none under way (a failed fold asks for no other), starts the folds
    /// and returns after a moment.
    private func roomMade() async {
        if folding { return await withCheckedContinuation { foldEnded.append($0) } }
        Task { await self.fold() }
        try? await Task.sleep(for: .milliseconds(20))
    }

    private func commit(license: LicenseEntry? = nil, sync: SyncEntry? = nil) async throws {
        if let license { licenses.append(license) }
        if let sync { syncs.append(sync) }
        try await commit()
    }

    /// Waits for the batch holding the caller's record, or writes it when no transaction is in flight.
    private func commit() async throws {
        if writing {
            switch await withCheckedContinuation({ waiters.append($0) }) {
            case .committed: return
            case let .failed(error): throw error
            case .lead: break
            }
        } else {
            writing = true
        }
        let pendingLicenses = licenses, pendingSyncs = syncs, batch = waiters
        licenses = []
        syncs = []
        waiters = []
        var failure: (any Error)?
        do { try await write(pendingLicenses, pendingSyncs) } catch { failure = error }
        for waiter in batch { waiter.resume(returning: failure.map { .failed($0) } ?? .committed) }
        if waiters.isEmpty {
            writing = false
        } else {
            waiters.removeFirst().resume(returning: .lead)
        }
        if let failure { throw failure }
    }

    /// Waits until every record answered so far is in the database: no transaction in flight, or (journal mode)
    /// every record appended before the call folded.
    public func flush() async throws {
        guard let journal else {
            guard writing || !licenses.isEmpty || !syncs.isEmpty else { return }
            return try await commit()
        }
        let target = journal.counts.appended
        // Each turn waits for a fold under way or folds once itself (progress, or the error thrown): bounded.
        while journal.counts.folded < target {
            if folding {
                await withCheckedContinuation { foldEnded.append($0) }
                continue
            }
            folding = true
            let progressed: Bool
            do { progressed = try await foldOnce(journal) } catch {
                endFold()
                throw error
            }
            endFold()
            if !progressed { break }
        }
        // A record appended while this call folded may have found a fold asked for that had already ended: one runs.
        if journal.needsFold() { Task { await self.fold() } }
    }

    /// How often the journal's records are written to the database at most. Every commit makes each reader connection
    /// of a SQLite store drop its page cache (write-ahead readers start over whenever the log has changed), and on a
    /// large store the next lookups then fetch their index pages again: folds one after the other (tens a second under
    /// load) kept the key lookups' caches cold and doubled their slowest latencies. A record waits in the journal
    /// meanwhile, as durable as in the database, and a reader of the audit folds what waits before it reads.
    static let foldInterval: Duration = .milliseconds(250)

    /// Folds until the journal holds nothing new, each fold at least ``foldInterval`` after the one before; a failure
    /// leaves the records for the next fold, and is logged.
    private func fold() async {
        guard let journal, !foldsRunning else { return }
        foldsRunning = true
        defer { foldsRunning = false }
        do {
            while true {
                // A reader's fold (`flush`) meanwhile moves the next one on; one under way is waited for.
                while lastFold + Self.foldInterval > .now || folding {
                    if folding {
                        await withCheckedContinuation { foldEnded.append($0) }
                    } else if (try? await Task.sleep(until: lastFold + Self.foldInterval)) == nil {
                        break  // cancelled: fold now rather than spin
                    }
                }
                folding = true
                defer { endFold() }
                guard try await foldOnce(journal) else { break }
            }
            failureLogged = false
        } catch {
            if !failureLogged {
                Logger(label: "satchel.audit").error("the audit journal's records could not be written to the database; they are kept and retried",
                                                     metadata: ["error": "\(error)"])
                failureLogged = true
            }
        }
    }

    /// Writes the journal's pending records; false when there were none.
    private func foldOnce(_ journal: AuditJournal) async throws -> Bool {
        guard let (records, file) = journal.take() else { return false }
        lastFold = .now
        var pendingLicenses: [LicenseEntry] = [], pendingSyncs: [SyncEntry] = []
        for record in records {
            switch record {
            case let .license(entry): pendingLicenses.append(entry)
            case let .sync(entry): pendingSyncs.append(entry)
            }
        }
        do {
            try await write(pendingLicenses, pendingSyncs)
        } catch {
            journal.restore(records)
            throw error
        }
        await OwnThread.run { journal.folded(records, file: file) }  // a truncation, off the task pool
        return true
    }

    /// The journal, for tests that watch its counts.
    var journalForTests: AuditJournal? { journal }

    /// Gives the journal up to the next process (the store is closing).
    func release() {
        journal?.release()
    }

    private func endFold() {
        folding = false
        for waiter in foldEnded { waiter.resume() }
        foldEnded = []
    }

    /// Writes the records atomically: one multi-row INSERT (a statement is its own transaction), or a
    /// transaction when there are several statements.
    private func write(_ pendingLicenses: [LicenseEntry], _ pendingSyncs: [SyncEntry]) async throws {
        guard !pendingLicenses.isEmpty || !pendingSyncs.isEmpty else { return }
        try await database.withConnection { connection in
            // The rows inserted (not those a record folded again left alone) are counted into the hourly roll-ups, in the
            // same transaction: the dashboard's charts always equal a count of the audit.
            if connection is any SQLiteDatabase {
                let statements = AuditSQLite.inserts(pendingLicenses, pendingSyncs)
                try await connection.transaction { db in
                    guard let sqlite = db as? any SQLiteDatabase, let sql = db as? any SQLDatabase else {
                        throw LicensingError.storage("the audit log lost its SQLite connection")
                    }
                    var inserted: [(type: String, at: Date)] = []
                    for statement in statements {
                        for row in try await sqlite.query(statement.sql, statement.binds) {
                            guard let type = row.column("type")?.string, let seconds = row.column("issued_at")?.double else { continue }
                            inserted.append((type, Date(timeIntervalSince1970: seconds)))
                        }
                    }
                    try await Rollups.add(Rollups.tally(inserted) { Rollups.Bucket("license:" + $0.type, at: $0.at) }, on: sql)
                }
                return
            }
            try await connection.transaction { db in
                guard let sql = db as? any SQLDatabase else { throw LicensingError.storage("the audit log needs an SQL database") }
                var inserted: [(type: String, at: Date)] = []
                let statements = Self.inserts(pendingLicenses, pendingSyncs, on: sql)
                for statement in statements.licenses {
                    for row in try await statement.all() {
                        inserted.append((try row.decode(column: "type", as: String.self), try row.decode(column: "issued_at", as: Date.self)))
                    }
                }
                for statement in statements.syncs { try await statement.run() }
                try await Rollups.add(Rollups.tally(inserted) { Rollups.Bucket("license:" + $0.type, at: $0.at) }, on: sql)
            }
        }
        written += pendingLicenses.count + pendingSyncs.count
        transactions += 1
    }

    /// PostgreSQL's multi-row INSERTs (at most 500 rows each) for the records, through SQLKit (SQLite's, the hot path
    /// of the journal's folds, bind SQLite values directly: `AuditSQLite`). A row already there is left as it is.
    private static func inserts(_ licenses: [LicenseEntry], _ syncs: [SyncEntry], on sql: any SQLDatabase)
        -> (licenses: [SQLReturningResultBuilder<SQLInsertBuilder>], syncs: [SQLInsertBuilder]) {
        var statements: (licenses: [SQLReturningResultBuilder<SQLInsertBuilder>], syncs: [SQLInsertBuilder]) = ([], [])
        for start in stride(from: 0, to: licenses.count, by: 500) {
            var insert = sql.insert(into: LicenseModel.schema).columns("id", "asset_id", "key_id", "subject", "type", "issued_at", "custom_data")
            for entry in licenses[start..<min(start + 500, licenses.count)] {
                insert = insert.values(SQLBind(entry.id), SQLBind(entry.assetID), SQLBind(entry.keyID), SQLBind(entry.subject),
                                       SQLBind(entry.type), SQLBind(entry.issuedAt), SQLBind(entry.customData))
            }
            statements.licenses.append(insert.ignoringConflicts().returning("type", "issued_at"))
        }
        for start in stride(from: 0, to: syncs.count, by: 500) {
            var insert = sql.insert(into: SyncModel.schema).columns("id", "content_id", "duration_to_expiry", "subject", "received_at")
            for entry in syncs[start..<min(start + 500, syncs.count)] {
                insert = insert.values(SQLBind(entry.id), SQLBind(entry.contentID), SQLBind(entry.durationToExpiry),
                                       SQLBind(entry.subject), SQLBind(entry.receivedAt))
            }
            statements.syncs.append(insert.ignoringConflicts())
        }
        return statements
    }
}
