import SatchelBytes

/// Why a database could not be opened, migrated or used. Never carries a password or a connection string.
public enum StorageError: ProblemConvertible, Equatable {
    /// The database could not be opened.
    case cannotOpen(String)
    /// A migration failed; the database is left as the last migration that succeeded.
    case migration(String)
    /// A query failed.
    case query(String)

    /// `storage-open`, `storage-migration` or `storage-query`.
    public var code: String {
        switch self {
        case .cannotOpen: return "storage-open"
        case .migration: return "storage-migration"
        case .query: return "storage-query"
        }
    }

    public var description: String {
        switch self {
        case let .cannotOpen(reason): return "cannot open the database: \(reason)"
        case let .migration(reason): return "cannot migrate the database: \(reason)"
        case let .query(reason): return "database query failed: \(reason)"
        }
    }
}
