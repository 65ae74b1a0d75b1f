import FluentKit

/// Tables a SQLite store keeps in a file of their own beside its main file, for data written often that the store's
/// requests rarely read. SQLite's readers drop their whole page cache whenever another connection has committed to
/// their file, so a table written every few milliseconds in the main file makes every read there start cold; in a file
/// of its own its commits leave the main file's readers alone. (PostgreSQL keeps such tables in its one database: its
/// buffers are shared, not dropped at a commit.)
public struct StoreFile: Sendable {
    /// The file's name in the data directory.
    public let name: String
    /// The file's migrations, given the path of the store's main file (to move in what an earlier store kept there).
    public let migrations: @Sendable (_ store: String) -> [any Migration]

    /// A file named `name` migrated with `migrations`.
    public init(name: String, migrations: @escaping @Sendable (_ store: String) -> [any Migration]) {
        (self.name, self.migrations) = (name, migrations)
    }
}
