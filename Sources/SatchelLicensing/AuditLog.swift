import FluentKit
import Foundation
import SQLKit

/// Buffers license and sync records and writes them in batches, one transaction each, so that
/// issuing a license does not wait for a database commit.
///
/// The owner calls ``flush()`` periodically (``LicenseServer`` runs it as a service of the
/// application) and at shutdown; reads of the audit log flush first.
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

    private let database: any Database
    // Plain values here; Fluent models (reflection-heavy) are built only when a batch is written.
    private var licenses: [LicenseEntry] = []
    private var syncs: [SyncEntry] = []
    /// Records written so far.
    public private(set) var written = 0

    init(database: any Database) {
        self.database = database
    }

    func record(_ license: LicenseEntry) async {
        licenses.append(license)
        if licenses.count >= 256 { try? await flush() }
    }

    func record(_ sync: SyncEntry) async {
        syncs.append(sync)
        if syncs.count >= 256 { try? await flush() }
    }

    /// Writes every pending record in one transaction. On failure the records stay pending.
    public func flush() async throws {
        guard !licenses.isEmpty || !syncs.isEmpty else { return }
        let pendingLicenses = licenses, pendingSyncs = syncs
        licenses = []
        syncs = []
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
        } catch {
            licenses = pendingLicenses + licenses
            syncs = pendingSyncs + syncs
            throw error
        }
    }
}
