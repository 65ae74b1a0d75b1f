import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Folders and files only their owner may read: every data directory Satchel keeps (a device's licenses, tokens
/// and downloads; a server's keys) is mode 0700 and every file in it 0600, so another user of the machine reads
/// nothing — not even the names. Existing ones are tightened when opened (a folder 0755 left by an earlier
/// version, a database created 0644).
public enum PrivateFiles {
    /// Folder mode: owner only.
    public static let folderMode: mode_t = 0o700
    /// File mode: owner only.
    public static let fileMode: mode_t = 0o600

    /// Makes `path` (and any missing parent) a folder of mode 0700, or tightens it to 0700 when it exists.
    public static func folder(_ path: String) throws(SystemError) {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR || (info.st_mode & S_IFMT) == S_IFLNK else {
                throw SystemError("use as a folder", path: path, errno: ENOTDIR)
            }
            try tighten(path, to: folderMode)
            return
        }
        let parent = Self.parent(of: path)
        if !parent.isEmpty, parent != path, lstat(parent, &info) != 0 { try folder(parent) }
        guard mkdir(path, folderMode) == 0 || errno == EEXIST else { throw SystemError("create the folder", path: path, errno: errno) }
        try tighten(path, to: folderMode)  // mkdir's mode is narrowed by the umask, never widened: set it exactly
    }

    /// The folder `path` is in: "a/b/c" → "a/b", "/c" → "/", "c" → "" (trailing slashes ignored). Foundation's
    /// `deletingLastPathComponent` is not used: on Linux it traps on a one-character path ("d").
    public static func parent(of path: String) -> String {
        var end = path.endIndex
        while end > path.startIndex, path[path.index(before: end)] == "/" { end = path.index(before: end) }
        guard end > path.startIndex else { return path.isEmpty ? "" : "/" }
        guard let slash = path[..<end].lastIndex(of: "/") else { return "" }
        var cut = slash
        while cut > path.startIndex, path[path.index(before: cut)] == "/" { cut = path.index(before: cut) }
        return cut == path.startIndex ? "/" : String(path[..<cut])
    }

    /// Creates `path` empty with mode 0600 when it does not exist (no link followed), or tightens it to 0600:
    /// for a file another library creates (SQLite gives its journal the database file's mode).
    public static func file(_ path: String) throws(SystemError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, fileMode)
        guard fd >= 0 else { throw SystemError("create", path: path, errno: errno) }
        defer { close(fd) }
        guard fchmod(fd, fileMode) == 0 else { throw SystemError("restrict the mode of", path: path, errno: errno) }
    }

    /// Sets the mode of `path` when it is wider than `mode` (a folder or file of another owner is left as it is).
    private static func tighten(_ path: String, to mode: mode_t) throws(SystemError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw SystemError("read the mode of", path: path, errno: errno) }
        guard info.st_uid == geteuid(), info.st_mode & 0o777 & ~mode != 0 else { return }
        guard chmod(path, (info.st_mode & 0o7000) | mode) == 0 else { throw SystemError("restrict the mode of", path: path, errno: errno) }
    }
}

/// An advisory lock on a file (`flock`), shared between the processes that use one data directory: readers
/// take it shared, a writer exclusive, so a reader never sees one half of a change that spans two files.
public final class FileLock: Sendable {
    private let descriptor: Int32
    /// The lock file's path.
    public let path: String

    /// Opens (creating, mode 0600) the lock file at `path`.
    public init(path: String) throws(SystemError) {
        descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, PrivateFiles.fileMode)
        guard descriptor >= 0 else { throw SystemError("open the lock file", path: path, errno: errno) }
        self.path = path
    }

    deinit { close(descriptor) }

    /// Runs `body` holding the lock, shared or exclusive (waiting for it; the wait holds a thread).
    public func withLock<T, E: Error>(shared: Bool, _ body: () throws(E) -> T) throws(E) -> T {
        while flock(descriptor, shared ? LOCK_SH : LOCK_EX) != 0, errno == EINTR {}
        defer { _ = flock(descriptor, LOCK_UN) }
        return try body()
    }

    /// Takes the lock, shared or exclusive, without holding a cooperative thread while another process has it
    /// (the wait runs on a thread of its own); ``unlock()`` gives it back. One holder at a time per instance: two
    /// tasks of one process must not share an instance (``AsyncMutex`` in front of it serialises them).
    public func lock(shared: Bool) async {
        let operation = shared ? LOCK_SH : LOCK_EX
        if flock(descriptor, operation | LOCK_NB) == 0 { return }
        let descriptor = descriptor
        await OwnThread.run { while flock(descriptor, operation) != 0, errno == EINTR {} }
    }

    /// Takes the lock exclusive if no other holder has it (false at once when one has): a process that holds it for its
    /// lifetime keeps others out; the system gives it back when the process ends, however it ends.
    public func tryExclusive() -> Bool {
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            if errno != EINTR { return false }
        }
        return true
    }

    /// Gives the lock back.
    public func unlock() {
        _ = flock(descriptor, LOCK_UN)
    }
}

/// A lock for tasks: one holder at a time, the others wait (suspended, in the order they came).
public actor AsyncMutex {
    private var held = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// A free lock.
    public init() {}

    /// Waits until the lock is free, then holds it.
    public func lock() async {
        guard held else {
            held = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    /// Hands the lock to the next waiter, or frees it.
    public func unlock() {
        if waiters.isEmpty { held = false } else { waiters.removeFirst().resume() }
    }

    /// Runs `body` holding the lock.
    public nonisolated func withLock<T: Sendable, E: Error>(_ body: () async throws(E) -> T) async throws(E) -> T {
        await lock()
        do {
            let value = try await body()
            await unlock()
            return value
        } catch {
            await unlock()
            throw error
        }
    }
}
