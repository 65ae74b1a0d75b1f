import FluentKit
import Foundation
import Logging
import SQLKit

/// Writes the devices' sync times a store notes (``SyncTimes``) to ``SyncTimesTable``: every ``SyncTimes/interval``
/// while syncs keep coming, ``SyncTimes/batch`` devices a statement with pauses between them, and at once on
/// ``flush()``; and reads them back onto the devices a store answers with.
struct SyncTimeWriter: Sendable {
    /// The times noted and not yet written (shared by the copies of this writer and of its store).
    let times = SyncTimes()
    /// The table's database (a SQLite store's: its own file, ``SyncTimesTable/file``).
    let database: any Database

    /// Notes `device`'s sync at `now`, starting the write that takes it when none is scheduled.
    func note(device: String, at now: Date) {
        guard times.note(device, at: now) else { return }
        Task { await writeAlong() }
    }

    /// `devices` (a page at most) with their last syncs: as written, or as noted when a later one waits to be written.
    func withSyncs(_ devices: [BackplaneDevice]) async throws(BackplaneError) -> [BackplaneDevice] {
        guard !devices.isEmpty else { return devices }
        var written: [String: Date] = [:]
        do {
            for row in try await BackplaneQueries.sqlDatabase(database).raw(BackplaneQueries.syncTimes(of: devices.map(\.deviceID))).all() {
                written[try row.decode(column: "device_id", as: String.self)] = try row.decode(column: "last_sync", as: Date.self)
            }
        } catch {
            throw .storage("cannot read the devices' sync times: \(String(describing: error).prefix(200))")
        }
        return devices.map { device in
            var device = device
            device.lastSync = [written[device.deviceID], times.unwritten(device.deviceID)].compactMap { $0 }.max()
            return device
        }
    }

    /// `device` with its last sync (``withSyncs(_:)``).
    func withSync(_ device: BackplaneDevice) async throws(BackplaneError) -> BackplaneDevice {
        try await withSyncs([device])[0]
    }

    /// Writes `times` now.
    func record(_ times: [(key: String, value: Date)]) async throws(BackplaneError) {
        do {
            try await BackplaneQueries.sqlDatabase(database).raw(BackplaneQueries.recordSyncs(times)).run()
        } catch {
            throw .storage("cannot record the devices' sync times: \(String(describing: error).prefix(200))")
        }
    }

    /// Forgets a forgotten device's sync time (a time noted meanwhile may still be written: a row of a device that is
    /// no more, never read).
    func forget(device: String) async {
        try? await BackplaneQueries.sqlDatabase(database).raw(BackplaneQueries.forgetSync(device: device)).run()
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
    /// Spread, because once there are many devices each statement's commit writes a page for nearly every device it
    /// names (a write's devices lie one to a page), and copying those pages into the file follows. Written at once,
    /// 500 devices a statement (then in the devices' own table), that work took the CPU from the syncs answered beside
    /// it: their p99 was 1.4–1.6 times as long on a SQLite store of 100,000 devices as on one of 1,000 (about 1.27
    /// times spread, both faster; 1.05–1.10 with the times in their own file, ``SyncTimesTable``). A flush, which its
    /// caller waits for, writes ``SyncTimes/flushBatch`` devices a statement at once.
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
