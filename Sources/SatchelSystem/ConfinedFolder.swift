import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A folder opened once, read-only, and the only way in to its files: each is opened by its name below it
/// (``open(_:)-method``), no symbolic link followed (``ConfinedFile``). The folder itself is opened without following a
/// link either. What it reaches does not change if its path is later renamed or replaced: the files are those of the
/// folder that was opened. Closed when released.
public final class ConfinedFolder: Sendable {
    private let descriptor: Int32
    /// The folder's own name (for messages; it opens nothing).
    public let name: String

    private init(descriptor: Int32, name: String) {
        self.descriptor = descriptor
        self.name = name
    }

    deinit { close(descriptor) }

    /// Opens the folder at `path`: the folder holding it as given, then the folder itself with no link followed.
    public static func open(_ path: String) throws(ConfinedFile.Failure) -> ConfinedFolder {
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        let name = (trimmed as NSString).lastPathComponent
        try ConfinedFile.checkRelative(name)
        let parent = (trimmed as NSString).deletingLastPathComponent
        let base = systemOpen(parent.isEmpty ? "." : parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard base >= 0 else { throw ConfinedFile.failure(errno) }
        defer { close(base) }
        let folder = openat(base, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        let code = errno
        guard folder >= 0 else { throw ConfinedFile.isLink(name, in: base) ? .link : ConfinedFile.failure(code) }
        return ConfinedFolder(descriptor: folder, name: name)
    }

    /// ``open(_:)-type.method``, with nil when nothing is there.
    public static func openIfPresent(_ path: String) throws(ConfinedFile.Failure) -> ConfinedFolder? {
        do { return try open(path) } catch .missing { return nil }
    }

    /// Opens the regular file `relative` (components separated by `/`) below the folder, no link followed.
    public func open(_ relative: String) throws(ConfinedFile.Failure) -> ConfinedFile {
        try ConfinedFile.open(relative, in: descriptor)
    }

    /// ``open(_:)-method``, with nil when nothing is there.
    public func openIfPresent(_ relative: String) throws(ConfinedFile.Failure) -> ConfinedFile? {
        do { return try open(relative) } catch .missing { return nil }
    }
}
