import FluentKit
import Foundation
import Logging
import SQLKit

/// Writes the devices' sync times a store notes (``SyncTimes``) to its database: every ``SyncTimes/interval`` while
/// syncs keep coming, ``SyncTimes/batch`` devices a statement, and at once on ``flush()``.
struct SyncTimeWriter: Sendable {
    /// The times noted and not yet written (shared by the copies of this writer and of its store).
    let times = SyncTimes()
    let database: any Database

    /// Notes `device`'s sync at `now`, starting the write that takes it when none is scheduled.
    func note(device: String, at now: Date) {
        guard times.note(device, at: now) else { return }
        Task { await writeAlong() }
    }

    /// `device` with its last sync as noted, when a later one waits to be written.
    func withUnwrittenSync(_ device: BackplaneDevice) -> BackplaneDevice {
        guard let unwritten = times.unwritten(device.deviceID), device.lastSync.map({ $0 < unwritten }) ?? true else { return device }
        var device = device
        device.lastSync = unwritten
        return device
    }

    /// Writes the times noted, every ``SyncTimes/interval`` while syncs keep coming. A write that fails leaves its
    /// times for the next one, which the next sync schedules (a database that has closed is not tried for ever).
    func writeAlong() async {
        repeat {
            try? await Task.sleep(for: SyncTimes.interval)
            do {
                try await write()
            } catch {
                Logger(label: "satchel.backplane").warning("cannot record the devices' sync times (kept for the next try): \(String(describing: error).prefix(200))")
                _ = times.continues(stopping: true)
                return
            }
        } while times.continues()
    }

    /// Writes the times noted and not yet written, now: before the database closes.
    func flush() async throws(BackplaneError) {
        do {
            try await write()
        } catch {
            throw .storage("cannot record the devices' sync times: \(String(describing: error).prefix(200))")
        }
    }

    /// Writes what ``SyncTimes`` holds.
    private func write() async throws {
        let taken = times.take()
        guard !taken.isEmpty else { return }
        do {
            // In the key's order: two nodes writing the same devices lock their rows in the same order (no deadlock).
            let sql = try BackplaneQueries.sqlDatabase(database), rows = taken.sorted { $0.key < $1.key }
            for start in stride(from: 0, to: rows.count, by: SyncTimes.batch) {
                try await sql.raw(BackplaneQueries.recordSyncs(rows[start..<min(start + SyncTimes.batch, rows.count)])).run()
            }
        } catch {
            times.finished(taken, succeeded: false)
            throw error
        }
        times.finished(taken, succeeded: true)
    }
}
