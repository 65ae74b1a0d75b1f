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

    /// Writes the records in one transaction.
    private func write(_ pendingLicenses: [LicenseEntry], _ pendingSyncs: [SyncEntry]) async throws {
        guard !pendingLicenses.isEmpty || !pendingSyncs.isEmpty else { return }
        do {
            try await database.transaction { db in
                guard let sql = db as? any SQLDatabase else {
                    throw LicensingError.storage("the audit log needs an SQL database")
                }
                // Multi-row INSERTs through SQLKit: no per-row model reflection.
                for chunk in stride(from: 0, to: pendingLicenses.count, by: 500).map({ pendingLicenses[$0..<min($0 + 500, pendingLicenses.count)] }) {
                    var insert = sql.insert(into: LicenseModel.schema).columns("id", "asset_id", "key_id", "subject", "type", "issued_at")
                    for entry in chunk {
                        insert = insert.values(SQLBind(UUID()), SQLBind(entry.assetID), SQLBind(entry.keyID), SQLBind(entry.subject),
                                               SQLBind(entry.type), SQLBind(entry.issuedAt))
                    }
                    try await insert.run()
                }
                for chunk in stride(from: 0, to: pendingSyncs.count, by: 500).map({ pendingSyncs[$0..<min($0 + 500, pendingSyncs.count)] }) {
                    var insert = sql.insert(into: SyncModel.schema).columns("id", "content_id", "duration_to_expiry", "subject", "received_at")
                    for entry in chunk {
                        insert = insert.values(SQLBind(UUID()), SQLBind(entry.contentID), SQLBind(entry.durationToExpiry),
                                               SQLBind(entry.subject), SQLBind(entry.receivedAt))
                    }
                    try await insert.run()
                }
            }
            written += pendingLicenses.count + pendingSyncs.count
            transactions += 1
        }
    }
}
