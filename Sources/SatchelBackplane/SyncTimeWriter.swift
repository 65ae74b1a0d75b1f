import FluentKit
import Foundation
import Logging
import SQLKit

/// Writes the devices' sync times a store notes (``SyncTimes``) to its database: every ``SyncTimes/interval`` while
/// syncs keep coming, ``SyncTimes/batch`` devices a statement with pauses between them, and at once on ``flush()``.
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
                try await write(spread: true)
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

    /// Writes what ``SyncTimes`` holds; `spread`, with a pause between statements (``SyncTimes/pause(statements:)``).
    ///
    /// Spread, because once the devices' table is large each statement's commit writes a page of it for nearly every
    /// device it names (a write's devices lie one to a page), and copying those pages into the file follows. Written
    /// at once, 500 devices a statement, that work took the CPU from the syncs answered beside it: their p99 was
    /// 1.4–1.6 times as long on a SQLite store of 100,000 devices as on one of 1,000 (about 1.27 times spread, both
    /// faster). A flush, which its caller waits for, writes ``SyncTimes/flushBatch`` devices a statement at once.
    private func write(spread: Bool = false) async throws {
        let taken = times.take()
        guard !taken.isEmpty else { return }
        do {
            // In the key's order: two nodes writing the same devices lock their rows in the same order (no deadlock).
            let sql = try BackplaneQueries.sqlDatabase(database), rows = taken.sorted { $0.key < $1.key }
            let batch = spread ? SyncTimes.batch : SyncTimes.flushBatch
            let pause = spread ? SyncTimes.pause(statements: (rows.count + batch - 1) / batch) : .zero
            for start in stride(from: 0, to: rows.count, by: batch) {
                if start > 0, pause > .zero { try? await Task.sleep(for: pause) }
                try await sql.raw(BackplaneQueries.recordSyncs(rows[start..<min(start + batch, rows.count)])).run()
            }
        } catch {
            times.finished(taken, succeeded: false)
            throw error
        }
        times.finished(taken, succeeded: true)
    }
}
