import Crypto
import Foundation
import SQLKit
import SatchelBackplane
import SatchelBytes
import SatchelLicensing
import SatchelProtection
import SatchelRights
import SatchelStorage

/// `scale`: every request a device or a player makes, and the first and a deep page of each operator listing, timed
/// (p50, p99 under 8 concurrent callers) on a small store (1,000 assets, users and devices) and on one seeded at an
/// operator's size — SQLite: 100,000 assets (200,000 keys) and 100,000 devices; PostgreSQL (`SATCHEL_BENCH_DATABASE_URL`,
/// a database it may empty; the small store in `SATCHEL_BENCH_SMALL_DATABASE_URL`, another, to alternate their rounds):
/// 100,000 assets, 1,000,000 users, 2,000,000 devices, 10,000,000 audit records and 10,000,000 events — in the same run. Keys are seeded through the key store's catalogue import (its rate printed);
/// users, devices and history through multi-row SQL. The services are called in process: what grows with the data is
/// in the store, and HTTP's cost does not change with it.
struct ScaleBenchmark {
    /// Sizes of one store.
    struct Sizes {
        var assets: Int, users: Int, devices: Int, audit: Int, events: Int
        static let small = Sizes(assets: 1_000, users: 1_000, devices: 1_000, audit: 1_000, events: 1_000)
        static let sqlite = Sizes(assets: 100_000, users: 50_000, devices: 100_000, audit: 1_000_000, events: 1_000_000)
        static let postgres = Sizes(assets: 100_000, users: 1_000_000, devices: 2_000_000, audit: 10_000_000, events: 10_000_000)
    }

    /// Operations timed per figure, and callers at once.
    let operations: Int
    let concurrency = 8
    /// Scales every seeded size (1: the operator's sizes above).
    let factor: Double
    /// The operations timed, by name (nil: every one).
    var only: Set<String>? = nil

    func run() async throws {
        print("== scale: requests on a small store beside a store at an operator's size (p50 / p99 ms, \(concurrency) callers, rounds of at least \(operations) operations and 2 s) ==")
        try await compare(kind: "sqlite", url: nil, large: Sizes.sqlite)
        if let url = ProcessInfo.processInfo.environment["SATCHEL_BENCH_DATABASE_URL"] {
            try await compare(kind: "postgresql", url: url, large: Sizes.postgres)
        } else {
            print("PostgreSQL skipped: set SATCHEL_BENCH_DATABASE_URL to a database the benchmark may empty")
        }
    }

    func scaled(_ sizes: Sizes) -> Sizes {
        func f(_ n: Int) -> Int { max(1_000, Int(Double(n) * factor)) }
        return Sizes(assets: f(sizes.assets), users: f(sizes.users), devices: f(sizes.devices), audit: f(sizes.audit), events: f(sizes.events))
    }

    func compare(kind: String, url: String?, large: Sizes) async throws {
        let large = scaled(large)
        var small = Result(), big = Result()
        let smallURL = url == nil ? nil : ProcessInfo.processInfo.environment["SATCHEL_BENCH_SMALL_DATABASE_URL"]
        if url == nil || smallURL != nil {
            // Both stores open at once (PostgreSQL: the small one in a database of its own), each operation's rounds
            // alternating between them, so whatever else the machine and the server do in those minutes falls on both.
            let first = try await Seeded(url: smallURL, sizes: .small)
            let stores: [Seeded]
            do {
                stores = [first, try await Seeded(url: url, sizes: large)]
            } catch {
                await first.close()
                throw error
            }
            do {
                for ((name, first), (_, second)) in zip(stores[0].world.operations(), stores[1].world.operations()) where only?.contains(name) ?? true {
                    var rounds: [[(p50: Double, p99: Double)]] = [[], []]
                    for round in 0..<Self.rounds {
                        for (index, operation) in [first, second].enumerated() {
                            rounds[index].append(try await time(operation, round: round) { try await Seeded.settle(stores) })
                        }
                    }
                    small.figures.append((name, Self.median(rounds[0])))
                    big.figures.append((name, Self.median(rounds[1])))
                }
            } catch {
                for store in stores { await store.close() }
                throw error
            }
            for store in stores { await store.close() }
            big.notes = stores[1].notes
        } else {
            // PostgreSQL without a second database: one store after the other.
            print("  (the small store is timed before the large one: set SATCHEL_BENCH_SMALL_DATABASE_URL to a second database to alternate their rounds)")
            small = try await measure(url: url, sizes: .small)
            big = try await measure(url: url, sizes: large)
        }
        if let only, small.figures.count < only.count {
            print("  (--only names \(only.count) operations, \(small.figures.count) of them timed: a name must be written as the table prints it)")
        }
        print("\(kind): small store \(Sizes.small.assets) assets, \(Sizes.small.users) users, \(Sizes.small.devices) devices; large store \(large.assets) assets, "
              + "\(large.users) users, \(large.devices) devices, \(large.audit) audit records, \(large.events) events")
        func padded(_ text: String) -> String { text.padding(toLength: 32, withPad: " ", startingAt: 0) }
        print("  " + padded("operation") + "  small p50 / p99 ms   large p50 / p99 ms   p99 large/small")
        for (name, figure) in small.figures {
            guard let other = big.figures.first(where: { $0.0 == name })?.1 else { continue }
            print("  " + padded(name) + String(format: "  %8.2f / %7.2f   %8.2f / %7.2f   %6.2f×", figure.p50, figure.p99, other.p50, other.p99, other.p99 / max(figure.p99, 0.001)))
        }
        for (name, value) in big.notes { print("  \(name): \(value)") }
    }

    struct Result {
        var figures: [(String, (p50: Double, p99: Double))] = []
        var notes: [(String, String)] = []
    }

    /// A store seeded to its sizes and open, with the services over it.
    struct Seeded {
        let database: LicensingDatabase
        let world: ScaleWorld
        let directory: String
        var notes: [(String, String)] = []

        /// Seeds a fresh store of `sizes` (PostgreSQL: the database `url` names, emptied first).
        init(url: String?, sizes: Sizes) async throws {
            directory = NSTemporaryDirectory() + "satchel-scale-\(UUID().uuidString)"
            if let url, Tool.output(["psql", url, "-qc", "DROP SCHEMA public CASCADE; CREATE SCHEMA public"]) == nil {
                throw StorageError.cannotOpen("cannot empty the PostgreSQL database named by SATCHEL_BENCH_DATABASE_URL or SATCHEL_BENCH_SMALL_DATABASE_URL (psql)")
            }
            database = try await LicensingDatabase(dataDirectory: directory, url: url, more: BackplaneMigrations.all, files: [SyncTimesTable.file])
            do {
                let sql = try database.sql()
                let kek = try KeyEncryptionKey(SecretBytes(SecureRandom.bytes(32)))
                let store = FluentKeyStore(database: database, kek: kek)
                // Keys through the catalogue import, in batches of 5,000 keys.
                let started = ContinuousClock.now
                var keyIDs: [KeyID] = []
                for start in stride(from: 0, to: sizes.assets, by: 2_500) {
                    var entries: [CatalogEntry] = []
                    for asset in start..<min(start + 2_500, sizes.assets) {
                        let keys = try (0..<2).map { _ in try ContentKey(keyID: KeyID(SecureRandom.bytes(16)), key: SecretBytes(SecureRandom.bytes(16)), iv: SecureRandom.bytes(16)) }
                        keyIDs += keys.map(\.keyID)
                        let policy = AssetPolicy(rentalSeconds: 86_400, offline: true, renewalSeconds: 3_600)
                        entries.append(try CatalogEntry(assetID: String(format: "asset-%07d", asset), keys: keys, policy: policy))
                    }
                    _ = try await store.importCatalog(entries)
                }
                let keySeconds = (ContinuousClock.now - started) / .seconds(1)
                let seeding = ContinuousClock.now
                let files = [try database.auditSQL(), try Self.syncTimes(database)]
                try await ScaleSeed.rows(sizes, on: sql, audit: files[0], syncTimes: files[1])
                let rowSeconds = (ContinuousClock.now - seeding) / .seconds(1), settling = ContinuousClock.now
                try await ScaleSeed.settle(sql, files: files)
                let settleSeconds = (ContinuousClock.now - settling) / .seconds(1)
                let rows = sizes.users + 3 * sizes.devices + sizes.audit + sizes.events  // a device: its license registration, its backplane row, its last sync
                notes.append(("seeding", String(format: "%d keys through the catalogue import at %.0f keys/s; %d rows of users, devices and history at %.0f rows/s, "
                                                + "then %.0f s to analyse (and on PostgreSQL vacuum and checkpoint) the loaded store, %.0f rows/s with it",
                                                sizes.assets * 2, Double(sizes.assets * 2) / keySeconds, rows, Double(rows) / rowSeconds, settleSeconds,
                                                Double(rows) / (rowSeconds + settleSeconds))))
                if let size = try await ScaleSeed.databaseBytes(sql, directory: directory) {
                    notes.append(("database size", String(format: "%.0f MB in all, %.0f MB per million devices", Double(size) / 1e6,
                                                      Double(size) / 1e6 / (Double(sizes.devices) / 1e6))))
                }
                world = try await ScaleWorld(database: database, store: store, kek: kek, keyIDs: keyIDs, sizes: sizes)
            } catch {
                await database.shutdown()
                try? FileManager.default.removeItem(atPath: directory)
                throw error
            }
        }

        /// Brings the open stores to the state each round starts in: every store's audit records and devices' sync times
        /// of earlier rounds written and a SQLite store's log copied into its files, a PostgreSQL server's dirty buffers
        /// written out (a round pays neither for the last one's writes nor for the other store's).
        static func settle(_ stores: [Seeded]) async throws {
            for store in stores {
                try await store.database.audit.flush()
                try await store.world.backplane.flush()
                let main = try store.database.sql()
                guard main.dialect.name == "sqlite" else {
                    // PostgreSQL: the buffers earlier rounds dirtied written out (the role may lack pg_checkpoint: the seeding said so).
                    try? await main.raw("CHECKPOINT").run()
                    continue
                }
                for sql in [main, try store.database.auditSQL(), try syncTimes(store.database)] { try await sql.raw("PRAGMA wal_checkpoint(PASSIVE)").run() }
            }
        }

        /// The sync times' database (a SQLite store's own file for them).
        static func syncTimes(_ database: LicensingDatabase) throws -> any SQLDatabase {
            guard let sql = database.database(of: SyncTimesTable.file) as? any SQLDatabase else { throw StorageError.cannotOpen("the sync times' database does not speak SQL") }
            return sql
        }

        /// Closes the store and deletes its folder.
        func close() async {
            try? await world.backplane.flush()
            await database.shutdown()
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    /// Seeds a fresh store of `sizes` and times every operation on it.
    func measure(url: String?, sizes: Sizes) async throws -> Result {
        let store = try await Seeded(url: url, sizes: sizes)
        var result = Result(notes: store.notes)
        do {
            for (name, operation) in store.world.operations() where only?.contains(name) ?? true {
                result.figures.append((name, try await time(operation) { try await Seeded.settle([store]) }))
            }
        } catch {
            await store.close()
            throw error
        }
        await store.close()
        return result
    }

    /// Rounds each figure is taken in: the figure printed is the median round's, so one round that a checkpoint, the
    /// kernel or another process slowed does not decide a p99 alone (the same for both stores).
    static let rounds = 7

    /// The median round's p50 and p99.
    static func median(_ figures: [(p50: Double, p99: Double)]) -> (p50: Double, p99: Double) {
        let p50 = figures.map(\.p50).sorted(), p99 = figures.map(\.p99).sorted()
        return (p50[p50.count / 2], p99[p99.count / 2])
    }

    /// p50 and p99 in milliseconds of `operation`, each the median of ``rounds`` rounds.
    func time(_ operation: @escaping @Sendable (Int) async throws -> Void, settle: () async throws -> Void) async throws -> (p50: Double, p99: Double) {
        var figures: [(p50: Double, p99: Double)] = []
        for round in 0..<Self.rounds { figures.append(try await time(operation, round: round, settle: settle)) }
        return Self.median(figures)
    }

    /// The shortest round: a request of a millisecond would otherwise be timed for a fraction of a second, and whether
    /// the server's checkpointer or the kernel paused once in that fraction would decide its p99.
    static let shortestRound = Duration.seconds(2)

    /// p50 and p99 in milliseconds of `operation` run at least `operations` times, and for at least ``shortestRound``,
    /// by `concurrency` callers, with numbers of the round's own.
    func time(_ operation: @escaping @Sendable (Int) async throws -> Void, round: Int, settle: () async throws -> Void) async throws -> (p50: Double, p99: Double) {
        let base = round * 100_000_000, (operations, concurrency) = (operations, concurrency)
        for index in 0..<20 { try await operation(-1 - index - round * 20) }  // warm-up
        try await settle()
        let started = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
            for caller in 0..<concurrency {
                group.addTask {
                    var own: [Double] = []
                    var index = caller
                    while index < operations || ContinuousClock.now - started < Self.shortestRound {
                        let start = ContinuousClock.now
                        try await operation(base + index)
                        own.append((ContinuousClock.now - start) / .milliseconds(1))
                        index += concurrency
                    }
                    return own
                }
            }
            var all: [Double] = []
            for try await own in group { all += own }
            return all.sorted()
        }
        guard !latencies.isEmpty else { return (0, 0) }
        return (latencies[latencies.count / 2], latencies[min(latencies.count - 1, Int(Double(latencies.count) * 0.99))])
    }
}

