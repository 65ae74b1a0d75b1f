import FluentKit
import Foundation
import SQLKit

/// The audit log with group commit: a license is answered only once its record is durable. Requests
/// that arrive while a transaction is being written wait for the next one, which writes all of them
/// together; so the cost of a commit is shared by every license issued meanwhile (a few milliseconds of
/// waiting under load, one transaction per batch instead of one per license).
///
/// The first request to find no transaction in flight writes the batch itself; when it is done it hands
/// the next batch to the first request waiting in it. No task runs in the background.
public actor AuditLog {
    /// One issued license, as recorded.
    struct LicenseEntry: Sendable {
        let assetID, keyID, subject, type: String
        let customData: String?
        let issuedAt: Date
    }

    /// One sync report, as recorded.
    struct SyncEntry: Sendable {
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

    private let database: any Database
    // Plain values here; Fluent models (reflection-heavy) are never built for the audit.
    private var licenses: [LicenseEntry] = []
    private var syncs: [SyncEntry] = []
    private var waiters: [CheckedContinuation<Outcome, Never>] = []
    private var writing = false
    /// Records written so far.
    public private(set) var written = 0
    /// Transactions written so far (records / transactions = the group-commit batch size).
    public private(set) var transactions = 0

    init(database: any Database) {
        self.database = database
    }

    /// Records a license; returns when the record is durable, throws when it could not be written.
    func record(_ license: LicenseEntry) async throws {
        licenses.append(license)
        try await commit()
    }

    /// Records a sync report; returns when the record is durable.
    func record(_ sync: SyncEntry) async throws {
        syncs.append(sync)
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

    /// Waits until no transaction is in flight (every record answered so far is durable).
    public func flush() async throws {
        guard writing || !licenses.isEmpty || !syncs.isEmpty else { return }
        try await commit()
    }

    /// Writes the records atomically: one multi-row INSERT (a statement is its own transaction), or a
    /// transaction when there are several statements.
    private func write(_ pendingLicenses: [LicenseEntry], _ pendingSyncs: [SyncEntry]) async throws {
        guard !pendingLicenses.isEmpty || !pendingSyncs.isEmpty else { return }
        try await database.withConnection { connection in
            guard let sql = connection as? any SQLDatabase else { throw LicensingError.storage("the audit log needs an SQL database") }
            let statements = Self.inserts(pendingLicenses, pendingSyncs, on: sql)
            if statements.count == 1, let statement = statements.first {
                try await statement.run()
            } else {
                try await connection.transaction { db in
                    guard let sql = db as? any SQLDatabase else { throw LicensingError.storage("the audit log needs an SQL database") }
                    for statement in Self.inserts(pendingLicenses, pendingSyncs, on: sql) { try await statement.run() }
                }
            }
        }
        written += pendingLicenses.count + pendingSyncs.count
        transactions += 1
    }

    /// Multi-row INSERTs (at most 500 rows each) for the records: no per-row model reflection.
    private static func inserts(_ licenses: [LicenseEntry], _ syncs: [SyncEntry], on sql: any SQLDatabase) -> [SQLInsertBuilder] {
        var statements: [SQLInsertBuilder] = []
        for start in stride(from: 0, to: licenses.count, by: 500) {
            var insert = sql.insert(into: LicenseModel.schema).columns("id", "asset_id", "key_id", "subject", "type", "issued_at", "custom_data")
            for entry in licenses[start..<min(start + 500, licenses.count)] {
                insert = insert.values(SQLBind(UUID()), SQLBind(entry.assetID), SQLBind(entry.keyID), SQLBind(entry.subject),
                                       SQLBind(entry.type), SQLBind(entry.issuedAt), SQLBind(entry.customData))
            }
            statements.append(insert)
        }
        for start in stride(from: 0, to: syncs.count, by: 500) {
            var insert = sql.insert(into: SyncModel.schema).columns("id", "content_id", "duration_to_expiry", "subject", "received_at")
            for entry in syncs[start..<min(start + 500, syncs.count)] {
                insert = insert.values(SQLBind(UUID()), SQLBind(entry.contentID), SQLBind(entry.durationToExpiry),
                                       SQLBind(entry.subject), SQLBind(entry.receivedAt))
            }
            statements.append(insert)
        }
        return statements
    }
}
