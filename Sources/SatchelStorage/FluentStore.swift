import FluentKit
import Logging
import NIOCore
import NIOPosix
import SQLKit

/// How a SQLite store commits. Every store writes ahead (`journal_mode = WAL`: one sync per commit at most, readers
/// never wait for the writer), and chooses when the log reaches the disk by what a lost commit would cost.
public enum SQLiteDurability: Sendable {
    /// `synchronous = FULL`: the log is synced at every commit, so a commit survives a power loss. For a store whose
    /// commits something else vouches for (the agent's store, whose anchor a rolled-back store would contradict).
    case everyCommit
    /// `synchronous = NORMAL`: the log is synced at checkpoints, so a commit survives a crash of the process but a
    /// power loss may take the last ones back (never corrupting the file). For a store that can be rebuilt or redone.
    case processCrash

    var pragma: String {
        switch self {
        case .everyCommit: "FULL"
        case .processCrash: "NORMAL"
        }
    }
}

/// A SQLite store's settings: its durability, and whether it is large (an operator's store: gigabytes).
public struct SQLiteSettings: Sendable {
    /// When a commit reaches the disk.
    public var durability: SQLiteDurability
    /// A large store gets 64 MB of page cache and the file mapped for reads (SQLite's 2 MB would send most reads of an
    /// index walk to the kernel), and its checkpoints taken off its writer (`Checkpointer`).
    public var large: Bool
    /// How often a large store's log is copied into its file.
    public var checkpointInterval: Duration

    /// Settings.
    public init(durability: SQLiteDurability, large: Bool = false, checkpointInterval: Duration = .seconds(1)) {
        (self.durability, self.large, self.checkpointInterval) = (durability, large, checkpointInterval)
    }

    /// How long a statement waits for another process's lock before it fails (SQLite sleeps between tries: the
    /// driver's own handler would retry at once, for ever, spinning a thread).
    public static let busyTimeoutMilliseconds = 5_000
}

/// An open FluentKit database with its migrations applied: what the key store and the download index share.
public struct FluentStore: Sendable {
    /// The connection sources; shut them down with ``shutdown()``.
    public let databases: Databases
    /// The database handle.
    public let database: any Database
    /// Handles for reads that need not see this process's uncommitted writes: on SQLite connections of their own (on
    /// another event loop than the writer's), so a request's read never waits for a batch the writer's connection is
    /// committing (write-ahead logging lets readers go beside the writer) — two for a large store, one otherwise; on
    /// PostgreSQL the same pooled handle.
    public let readers: ReaderPool
    /// The next of ``readers``.
    public var reader: any Database { readers.next() }
    /// The second reader's connection source (a large SQLite store's; a source has one connection per event loop).
    let moreReaders: Databases?
    /// A SQLite store's own threads (its blocking calls never wait behind another store's, or take a thread the
    /// downloads' file work needs); nil for PostgreSQL, whose driver does not block.
    let threadPool: NIOThreadPool?
    /// Whether ``readers`` are connections of their own.
    let separateReader: Bool
    /// A large SQLite store's checkpoints, off its writer.
    var checkpointer: Checkpointer?

    /// How many times migrating is tried before opening fails.
    static let migrationAttempts = 5

    /// Opens `configuration` and runs `migrations` (setting up the migration log first); `sqlite` says the store is a
    /// SQLite file and how it commits. Everything opened is shut down again when this fails.
    public static func open(_ configuration: DatabaseConfigurationFactory, as id: DatabaseID, migrations: [any Migration],
                            sqlite: SQLiteSettings? = nil, logger: Logger) async throws(StorageError) -> FluentStore {
        let logger = driverLogger(logger)
        let group = MultiThreadedEventLoopGroup.singleton
        // One event loop for the handle and the migrations: a SQLite store then has one connection, whose settings hold.
        let loop = group.next()
        // A thread for each connection (the writer's, each reader's and a large store's checkpointer's block one while
        // SQLite works).
        let threadPool = sqlite.map { NIOThreadPool(numberOfThreads: $0.large ? 4 : 2) }
        threadPool?.start()
        let databases = Databases(threadPool: threadPool ?? NIOThreadPool.singleton, on: group)
        databases.use(configuration, as: id)
        guard let database = databases.database(logger: logger, on: loop) else {
            await databases.shutdownAsync()
            try? await threadPool?.shutdownGracefully()
            throw .cannotOpen("no database is configured under this ID")
        }
        // A SQLite reader: another loop's pool, so another connection (one loop: the same one).
        let readLoop = group.makeIterator().first { $0 !== loop } ?? loop
        let ownReader = sqlite != nil && readLoop !== loop ? databases.database(logger: logger, on: readLoop) : nil
        let (reader, separate) = (ownReader ?? database, ownReader != nil)
        var moreReaders: Databases?
        var handles = [reader]
        if separate, sqlite?.large == true, let threadPool {
            let more = Databases(threadPool: threadPool, on: group)
            more.use(configuration, as: id)
            if let second = more.database(logger: logger, on: readLoop) { handles.append(second) }
            moreReaders = more
        }
        var store = FluentStore(databases: databases, database: database, readers: ReaderPool(handles), moreReaders: moreReaders,
                                threadPool: threadPool, separateReader: separate)
        if let sqlite {
            do {
                try await store.apply(sqlite)
            } catch {
                await store.shutdown()
                throw .cannotOpen("cannot set up the SQLite file: \(String(String(describing: error).prefix(200)))")
            }
        }
        // Several nodes starting at once against a new database would migrate it at once, one's statement failing on
        // what the other made: on PostgreSQL they take turns under an advisory lock (held by a connection of another
        // event loop's pool while the migrations run on this one's: a pool may have one connection); a failure is tried
        // again after a pause, which finds what the other process migrated logged (two processes opening one SQLite file).
        for attempt in 1...migrationAttempts {
            do {
                try await store.oneNodeAtATime(locking: databases.database(logger: logger, on: readLoop) ?? database) {
                    try await MigrationRunner.run(migrations, on: database)
                }
                break
            } catch {
                let failure = DatabaseFailure(error)
                if !failure.isPermanent, attempt < migrationAttempts, (try? await Task.sleep(for: .milliseconds(250 * attempt))) != nil { continue }
                await store.shutdown()
                throw .migration(failure.text)
            }
        }
        // The writer stops checkpointing only once the checkpointer runs (else the log would grow for ever).
        if let sqlite, sqlite.large, let threadPool, let sql = database as? any SQLDatabase,
           let checkpointer = await Checkpointer.start(configuration, as: id, threadPool: threadPool, every: sqlite.checkpointInterval, logger: logger) {
            store.checkpointer = checkpointer
            try? await sql.raw("PRAGMA wal_autocheckpoint = 0").run()
        }
        return store
    }

    /// `logger` as the database drivers get it: at info at the finest. Below it they log a store's contents: at debug
    /// every statement with its parameters, at trace (PostgreSQL's driver) every message of the protocol with the rows'
    /// and the parameters' bytes hex-dumped, on the connection's event loop (a test run at trace found a loop held
    /// 219 ms doing it).
    static func driverLogger(_ logger: Logger) -> Logger {
        var capped = logger
        if capped.logLevel < .info { capped.logLevel = .info }
        return capped
    }

    /// The advisory lock nodes migrating one PostgreSQL database take turns under (any constant they agree on).
    static let migrationLock: Int64 = 0x5341_5443_4845_4C4D

    /// Runs `body` while this node holds the migration lock on a connection of `lockHandle` (PostgreSQL), or at once
    /// (SQLite).
    private func oneNodeAtATime(locking lockHandle: any Database, _ body: @escaping @Sendable () async throws -> Void) async throws {
        guard (database as? any SQLDatabase)?.dialect.name == "postgresql" else { return try await body() }
        try await lockHandle.withConnection { connection in
            guard let sql = connection as? any SQLDatabase else { return try await body() }
            try await sql.raw("SELECT pg_advisory_lock(\(bind: Self.migrationLock))").run()
            do {
                try await body()
            } catch {
                try? await sql.raw("SELECT pg_advisory_unlock(\(bind: Self.migrationLock))").run()
                throw error
            }
            try await sql.raw("SELECT pg_advisory_unlock(\(bind: Self.migrationLock))").run()
        }
    }

    /// Sets up the SQLite connection: the busy timeout first (another process may hold the file), then the journal.
    private func apply(_ settings: SQLiteSettings) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await sql.raw("PRAGMA busy_timeout = \(literal: SQLiteSettings.busyTimeoutMilliseconds)").run()
        try await sql.raw("PRAGMA journal_mode = WAL").run()
        try await sql.raw("PRAGMA synchronous = \(unsafeRaw: settings.durability.pragma)").run()
        if settings.large {
            try await sql.raw("PRAGMA cache_size = -65536").run()
            try await sql.raw("PRAGMA mmap_size = 4294967296").run()
        }
        guard separateReader else { return }
        for handle in readers.handles {
            guard let read = handle as? any SQLDatabase else { continue }
            try await read.raw("PRAGMA busy_timeout = \(literal: SQLiteSettings.busyTimeoutMilliseconds)").run()
            try await read.raw("PRAGMA query_only = 1").run()
            if settings.large {
                try await read.raw("PRAGMA cache_size = -65536").run()
                try await read.raw("PRAGMA mmap_size = 4294967296").run()
            }
        }
    }

    /// Closes every connection, then the store's own thread.
    public func shutdown() async {
        await checkpointer?.stop()
        await moreReaders?.shutdownAsync()
        await databases.shutdownAsync()
        try? await threadPool?.shutdownGracefully()
    }

    /// Closes every connection and the store's thread, waiting for them (never on an event loop or in the task pool:
    /// for a `deinit`).
    public func shutdownBlocking() {
        checkpointer?.stopBlocking()
        moreReaders?.shutdown()
        databases.shutdown()
        try? threadPool?.syncShutdownGracefully()
    }
}
