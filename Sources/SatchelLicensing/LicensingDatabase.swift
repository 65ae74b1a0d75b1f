import FluentKit
import FluentPostgresDriver
import FluentSQLiteDriver
import Foundation
import Logging
import SQLKit
import SatchelStorage
import SatchelSystem

/// The key store's database: a SQLite file in the data directory by default (`satchel.sqlite`, with the audit in a file
/// of its own beside it, `AuditFile`), PostgreSQL with a `postgres://` URL. Migrations run when it opens.
public final class LicensingDatabase: Sendable {
    private let store: FluentStore
    /// SQLite: the audit's own file (`AuditFile`); nil on PostgreSQL, whose one database holds the audit.
    private let auditStore: FluentStore?
    /// SQLite: the files of other modules' tables (``StoreFile``), by name; empty on PostgreSQL.
    private let fileStores: [String: FluentStore]
    /// The database handle.
    public let database: any Database
    /// A handle for key lookups, the next in turn (`FluentStore.reader`): on SQLite a connection beside the audit's
    /// writer.
    public var reader: any Database { store.reader }
    /// The store's read-only handles (on SQLite, connections beside the writer; on PostgreSQL the database's pool).
    public var readers: ReaderPool { store.readers }
    /// "sqlite" or "postgres".
    public let kind: String
    /// The PostgreSQL connections a node opens at most (as its requests need them). The handle is bound to one
    /// event loop, whose pool this is: with FluentKit's default of one, every request of a node queued behind every
    /// other's round trips and commits (one node synced 277 devices a second; 642 with eight, on the same machine).
    public static let postgresConnections = 8

    /// The audit log of every key store over this database (`FluentKeyStore(database: self, kek:)`). With SQLite,
    /// the process that owns the data directory's audit journal answers licenses without waiting for the database's
    /// writer; with PostgreSQL (several nodes, one audit) each record is committed before its answer.
    public let audit: AuditLog

    /// Opens (and migrates) the database; `more` are the migrations of other modules that keep tables in it (the
    /// backplane's), run after the license service's own; `files`, the files of their own those modules keep beside a
    /// SQLite store, migrated last (on PostgreSQL their tables are in the one database, made by `more`).
    public init(dataDirectory: String, url: String?, more: [any Migration] = [], files: [StoreFile] = [],
                logger: Logger = Logger(label: "satchel.licensing")) async throws(LicensingError) {
        let configuration: DatabaseConfigurationFactory
        let id: DatabaseID
        if let url, url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") {
            do {
                configuration = try .postgres(url: url, maxConnectionsPerEventLoop: Self.postgresConnections)
            } catch {
                throw .configuration("invalid --database-url (expected postgres://user:password@host:port/database)")
            }
            (id, kind) = (.psql, "postgres")
        } else if let url {
            throw .configuration("unsupported --database-url scheme in \(url.prefix(12))… (use postgres://)")
        } else {
            let path = Self.storeFile(dataDirectory)
            do {
                // Owner only: the store holds sealed keys; the audit's file, who was issued what.
                try PrivateFiles.folder(dataDirectory)
                try PrivateFiles.file(path)
                for name in [AuditFile.name] + files.map(\.name) { try PrivateFiles.file((dataDirectory as NSString).appendingPathComponent(name)) }
            } catch {
                throw .configuration("cannot create the data directory \(dataDirectory) (owner only): \(error.description)")
            }
            configuration = .sqlite(.file(path))
            (id, kind) = (.sqlite, "sqlite")
        }
        do {
            // SQLite: write-ahead logging (readers never wait for the audit's writer), synced at checkpoints rather than
            // at every commit: a commit is durable against a crash of the process (what the audit promises: no license
            // answered without its record), not against one of the machine. A large store: 64 MB of cache, mapped.
            store = try await FluentStore.open(configuration, as: id, migrations: [CreateLicensingSchema(), CreateDeviceSchema(), CreateDeviceNonces(), AddDeviceDisabled(), IndexDeviceNonceTimes(),
                                                                                 CreateFairPlayRecords(), AddLicenseCustomData(), IndexForScale(), AddSigningKeyIntroductions(), AddKeySignalling(),
                                                                                 CreateRollups(name: "satchel-licensing-rollups"),
                                                                                 PartitionByMonth(name: "satchel-licensing-history-by-month",
                                                                                                  tables: [LicensingQueries.licenseHistory, LicensingQueries.syncHistory])] + more,
                                               sqlite: kind == "sqlite" ? SQLiteSettings(durability: .processCrash, large: true) : nil, logger: logger)
            database = store.database
        } catch {
            throw .storage("cannot open or migrate the \(kind) database: \(error)")
        }
        guard kind == "sqlite" else {
            (auditStore, audit, fileStores) = (nil, AuditLog(database: database), [:])
            return
        }
        let journal: AuditJournal?
        do {
            journal = try AuditJournal.claim(directory: dataDirectory)
        } catch {
            await store.shutdown()
            throw .storage("cannot open the audit journal: \(error.description)")
        }
        do {
            let directory = dataDirectory as NSString
            auditStore = try await FluentStore.open(.sqlite(.file(directory.appendingPathComponent(AuditFile.name))), as: .sqlite,
                                                    migrations: AuditFile.migrations(store: Self.storeFile(dataDirectory)),
                                                    sqlite: SQLiteSettings(durability: .processCrash, large: true), logger: logger)
        } catch {
            journal?.release()
            await store.shutdown()
            throw .storage("cannot open or migrate the audit's file \(AuditFile.name): \(error)")
        }
        audit = AuditLog(database: auditStore?.database ?? database, journal: journal)
        var opened: [String: FluentStore] = [:]
        for file in files {
            let path = (dataDirectory as NSString).appendingPathComponent(file.name)
            do {
                opened[file.name] = try await FluentStore.open(.sqlite(.file(path)), as: .sqlite, migrations: file.migrations(Self.storeFile(dataDirectory)),
                                                               sqlite: SQLiteSettings(durability: .processCrash, large: true), logger: logger)
            } catch {
                for store in opened.values { await store.shutdown() }
                await audit.release()
                await auditStore?.shutdown()
                await store.shutdown()
                throw .storage("cannot open or migrate \(file.name): \(error)")
            }
        }
        fileStores = opened
    }

    /// The handle of `file`'s tables: on SQLite the file's own (opened by ``init(dataDirectory:url:more:files:logger:)``
    /// with it), otherwise the database's.
    public func database(of file: StoreFile) -> any Database {
        fileStores[file.name]?.database ?? database
    }

    /// Runs `body` on the database, then closes it (``shutdown()``) whether `body` returns or throws.
    package func using<T>(_ body: (LicensingDatabase) async throws -> T) async throws -> T {
        let result: T
        do {
            result = try await body(self)
        } catch {
            await shutdown()
            throw error
        }
        await shutdown()
        return result
    }

    /// The SQLite store's main file in `dataDirectory`.
    static func storeFile(_ dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent("satchel.sqlite")
    }

    /// The handle as an SQL database (FluentKit's SQLite and PostgreSQL drivers both are).
    public func sql() throws(LicensingError) -> any SQLDatabase {
        guard let sql = database as? any SQLDatabase else { throw .configuration("the database does not speak SQL") }
        return sql
    }

    /// The audit's handle as an SQL database: on SQLite its own file's, on PostgreSQL the database's.
    public func auditSQL() throws(LicensingError) -> any SQLDatabase {
        guard let sql = audit.database as? any SQLDatabase else { throw .configuration("the database does not speak SQL") }
        return sql
    }

    /// Writes the audit's pending records to the database (what cannot be written stays in the journal for the next
    /// process), then closes every connection.
    public func shutdown() async {
        try? await audit.flush()
        await audit.release()
        await auditStore?.shutdown()
        for store in fileStores.values { await store.shutdown() }
        await store.shutdown()
    }
}
