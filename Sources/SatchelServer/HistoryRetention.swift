import Foundation
import Logging
import SQLKit
import SatchelBackplane
import SatchelLicensing
import SatchelStorage

/// `satchel serve --retain-audit DAYS --retain-events DAYS`: the audit (licenses issued, FairPlay sync reports) and the
/// devices' events kept that many days, swept at start and then every hour (`Retention`: whole months dropped on
/// PostgreSQL, the rest in small batches). On PostgreSQL each sweep also makes the months ahead (`MonthlyPartitions`),
/// so it runs whether or not anything is ever deleted.
package struct HistoryRetention: Sendable {
    /// Days of audit kept (nil: for ever).
    package var auditDays: Int?
    /// Days of device events kept (nil: for ever).
    package var eventDays: Int?
    /// How often a sweep runs.
    package static let interval: Duration = .seconds(3600)

    /// The audit's tables, and the events'.
    static let audit = [
        Retention.History(LicensingQueries.licenseHistory, rollups: "license:%"),
        Retention.History(LicensingQueries.syncHistory, rollups: nil),
    ]
    static let events = [Retention.History(FluentEventStore.history, rollups: "event:%")]

    /// A retention of `auditDays` and `eventDays` (each 1 or more, or nil).
    package init(auditDays: Int?, eventDays: Int?) {
        (self.auditDays, self.eventDays) = (auditDays, eventDays)
    }

    /// One sweep at `now` of the audit on `audit` and the events on `events` (on SQLite two files, on PostgreSQL one
    /// database): on PostgreSQL the months ahead made first; answers the rows deleted by table.
    @discardableResult
    package func sweep(at now: Date, audit: any SQLDatabase, events: any SQLDatabase) async throws -> [String: Int] {
        var deleted: [String: Int] = [:]
        for (days, histories, sql) in [(auditDays, Self.audit, audit), (eventDays, Self.events, events)] {
            for history in histories { try await MonthlyPartitions.ensure(history.table, at: now, on: sql) }
            guard let days else { continue }
            for history in histories {
                deleted[history.table.name] = try await Retention.sweep(history, before: Retention.cutoff(days: days, at: now), on: sql)
            }
        }
        return deleted
    }

    /// Sweeps now and every ``interval`` until cancelled; a failed sweep is logged and tried again at the next.
    package func run(audit: any SQLDatabase, events: any SQLDatabase, logger: Logger = Logger(label: "satchel.retention")) async {
        while !Task.isCancelled {
            do {
                let deleted = try await sweep(at: Date(), audit: audit, events: events)
                if deleted.values.contains(where: { $0 > 0 }) {
                    logger.notice("history past its retention deleted", metadata: deleted.mapValues { .stringConvertible($0) })
                }
            } catch is CancellationError {
                return
            } catch {
                logger.error("the retention sweep failed; it runs again in an hour", metadata: ["error": "\(String(describing: error).prefix(200))"])
            }
            try? await Task.sleep(for: Self.interval)
        }
    }
}
