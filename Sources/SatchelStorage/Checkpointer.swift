import FluentKit
import Logging
import NIOCore
import NIOPosix
import SQLKit

/// A large SQLite store's checkpoints, taken off its writer. SQLite copies the write-ahead log into the file every
/// thousand pages by default, in the commit that crosses the mark: that commit, and every request queued behind the
/// store's one writer, waits while the log's pages are written into the file and synced. On a store of gigabytes those
/// pages lie all over the file, and the waits were the slowest answers of every request that writes (a sync, an event
/// batch, a registration). Here the writer never checkpoints (`wal_autocheckpoint = 0`); a connection of its own, on a
/// thread of its own, takes a passive checkpoint every ``SQLiteSettings/checkpointInterval`` (one that never waits for
/// a reader or the writer) while commits go on beside it.
final class Checkpointer: Sendable {
    private let databases: Databases
    private let task: Task<Void, Never>

    /// Starts checkpointing `configuration`'s file every `interval`, on `threadPool`; nil when no connection opens.
    static func start(_ configuration: DatabaseConfigurationFactory, as id: DatabaseID, threadPool: NIOThreadPool, every interval: Duration,
                      logger: Logger) async -> Checkpointer? {
        let group = MultiThreadedEventLoopGroup.singleton
        let databases = Databases(threadPool: threadPool, on: group)
        databases.use(configuration, as: id)
        guard let sql = databases.database(logger: logger, on: group.next()) as? any SQLDatabase,
              (try? await sql.raw("PRAGMA busy_timeout = \(literal: SQLiteSettings.busyTimeoutMilliseconds)").run()) != nil else {
            await databases.shutdownAsync()
            return nil
        }
        return Checkpointer(databases: databases, task: Task {
            var failing = false
            while (try? await Task.sleep(for: interval)) != nil {
                do {
                    try await sql.raw("PRAGMA wal_checkpoint(PASSIVE)").run()
                    failing = false
                } catch {
                    // Logged once a run of failures; the log keeps growing meanwhile, and the next try catches up.
                    if !failing { logger.error("the SQLite store's checkpoint failed; it is tried again", metadata: ["error": "\(String(describing: error).prefix(200))"]) }
                    failing = true
                }
            }
        })
    }

    private init(databases: Databases, task: Task<Void, Never>) {
        (self.databases, self.task) = (databases, task)
    }

    /// Stops checkpointing and closes the connection (SQLite checkpoints what is left when the store's last one closes).
    func stop() async {
        task.cancel()
        _ = await task.value
        await databases.shutdownAsync()
    }

    /// Stops checkpointing and closes the connection, waiting (never on an event loop or in the task pool: for a
    /// `deinit`).
    func stopBlocking() {
        task.cancel()
        databases.shutdown()
    }
}
