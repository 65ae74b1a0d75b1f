import FluentKit
import Logging
import NIOCore
import NIOPosix

/// An open FluentKit database with its migrations applied: what the key store and the download index share.
public struct FluentStore: Sendable {
    /// The connection sources; shut them down when done.
    public let databases: Databases
    /// The database handle.
    public let database: any Database

    /// How many times migrating is tried before opening fails.
    static let migrationAttempts = 5

    /// Opens `configuration` and runs `migrations` (setting up the migration log first). Everything opened
    /// is shut down again when this fails.
    public static func open(_ configuration: DatabaseConfigurationFactory, as id: DatabaseID, migrations: [any Migration],
                            logger: Logger) async throws(StorageError) -> FluentStore {
        let group = MultiThreadedEventLoopGroup.singleton
        let databases = Databases(threadPool: NIOThreadPool.singleton, on: group)
        databases.use(configuration, as: id)
        guard let database = databases.database(logger: logger, on: group.any()) else {
            await databases.shutdownAsync()
            throw .cannotOpen("no database is configured under this ID")
        }
        let list = Migrations()
        for migration in migrations { list.add(migration) }
        let migrator = Migrator(databases: databases, migrations: list, logger: logger, on: group.any(), migrationLogLevel: .debug)
        // Several nodes starting at once against a new database migrate it at once: one's statement fails on what the
        // other made. Trying again after a pause finds the other's migrations logged and goes on from there.
        for attempt in 1...migrationAttempts {
            do {
                try await migrator.setupIfNeeded().get()
                try await migrator.prepareBatch().get()
                break
            } catch {
                if attempt < migrationAttempts, (try? await Task.sleep(for: .milliseconds(250 * attempt))) != nil { continue }
                await databases.shutdownAsync()
                throw .migration(String(String(describing: error).prefix(200)))
            }
        }
        return FluentStore(databases: databases, database: database)
    }
}
