import FluentKit
import Foundation
import Logging
import SQLKit

extension FluentBackplaneStore {
    /// Notes `device`'s sync at `now` (``SyncTimes``), starting the write that takes it when none is scheduled.
    func noteSync(device: String, at now: Date) {
        guard syncTimes.note(device, at: now) else { return }
        Task { await writeSyncTimes() }
    }

    /// `device` with its last sync as noted, when a later one waits to be written.
    func withUnwrittenSync(_ device: BackplaneDevice) -> BackplaneDevice {
        guard let unwritten = syncTimes.unwritten(device.deviceID), device.lastSync.map({ $0 < unwritten }) ?? true else { return device }
        var device = device
        device.lastSync = unwritten
        return device
    }

    /// Writes the sync times noted, every ``SyncTimes/interval`` while syncs keep coming. A write that fails leaves
    /// its times for the next one, which the next sync schedules (a database that has closed is not retried for
    /// ever).
    func writeSyncTimes() async {
        repeat {
            try? await Task.sleep(for: SyncTimes.interval)
            do {
                try await writeNoted()
            } catch {
                Logger(label: "satchel.backplane").warning("cannot record the devices' sync times (kept for the next try): \(String(describing: error).prefix(200))")
                _ = syncTimes.continues(stopping: true)
                return
            }
        } while syncTimes.continues()
    }

    /// Writes the sync times noted and not yet written, now: before the database closes.
    public func flush() async throws(BackplaneError) {
        do {
            try await writeNoted()
        } catch {
            throw .storage("cannot record the devices' sync times: \(String(describing: error).prefix(200))")
        }
    }

    /// Writes what ``SyncTimes`` holds, ``SyncTimes/batch`` devices a statement.
    private func writeNoted() async throws {
        let times = syncTimes.take()
        guard !times.isEmpty else { return }
        do {
            let sql = try BackplaneQueries.sqlDatabase(databaseHandle), rows = Array(times)
            for start in stride(from: 0, to: rows.count, by: SyncTimes.batch) {
                try await sql.raw(BackplaneQueries.recordSyncs(rows[start..<min(start + SyncTimes.batch, rows.count)])).run()
            }
        } catch {
            syncTimes.finished(times, succeeded: false)
            throw error
        }
        syncTimes.finished(times, succeeded: true)
    }
}
