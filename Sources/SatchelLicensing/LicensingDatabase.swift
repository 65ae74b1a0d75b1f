import FluentKit
import FluentPostgresDriver
import FluentSQLiteDriver
import Foundation
import Logging
import NIOCore
import NIOPosix

/// The key store's database: a SQLite file in the data directory by default, PostgreSQL with a
/// `postgres://` URL. Migrations run when it opens.
public final class LicensingDatabase: Sendable {
    private let databases: Databases
    /// The database handle.
    public let database: any Database
    /// "sqlite" or "postgres".
    public let kind: String

    /// Opens (and migrates) the database.
    public init(dataDirectory: String, url: String?, logger: Logger = Logger(label: "satchel.licensing")) async throws(LicensingError) {
        let group = MultiThreadedEventLoopGroup.singleton
        databases = Databases(threadPool: NIOThreadPool.singleton, on: group)
        if let url, url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            do {
                databases.use(try .postgres(url: url), as: .psql)
            } catch {
                throw .configuration("invalid --database-url (expected postgres://user:password@host:port/database)")
            }
            kind = "postgres"
        } else if let url {
            throw .configuration("unsupported --database-url scheme in \(url.prefix(12))… (use postgres://)")
        } else {
            do {
                try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
            } catch {
                throw .configuration("cannot create the data directory \(dataDirectory)")
            }
            databases.use(.sqlite(.file((dataDirectory as NSString).appendingPathComponent("satchel.sqlite"))), as: .sqlite)
            kind = "sqlite"
        }
        guard let database = databases.database(logger: logger, on: group.any()) else {
            throw .configuration("cannot open the database")
        }
        self.database = database
        let migrations = Migrations()
        migrations.add(CreateLicensingSchema())
        let migrator = Migrator(databases: databases, migrations: migrations, logger: logger, on: group.any(), migrationLogLevel: .debug)
        do {
            try await migrator.setupIfNeeded().get()
            try await migrator.prepareBatch().get()
        } catch {
            await databases.shutdownAsync()
            throw .storage("cannot open or migrate the \(kind) database: \(String(describing: error).prefix(200))")
        }
    }

    /// Closes every connection.
    public func shutdown() async {
        await databases.shutdownAsync()
    }
}
