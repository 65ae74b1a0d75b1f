#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one way Satchel writes a file that must survive a crash: a temporary file in the same directory,
/// written whole, `fsync`ed, renamed over the target, and the directory `fsync`ed so the rename itself is
/// durable. A reader sees the old file or the new one, never a part; after a power cut, the same.
public enum AtomicFile {
    /// Writes `bytes` to `path` with `mode`. With `replace` false an existing file is never replaced
    /// (the call throws with `EEXIST`): for a file two processes may create at once, such as a key.
    public static func write<Bytes: Collection<UInt8>>(_ bytes: Bytes, to path: String, mode: mode_t = 0o644,
                                                       replace: Bool = true) throws(SystemError) {
        let (directory, name) = split(path)
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open the directory", path: directory, errno: errno) }
        defer { close(fd) }
        try write(bytes, name: name, in: fd, directoryPath: directory, mode: mode, replace: replace)
    }

    /// Writes `bytes` as `name` inside the open directory `directory` (no symbolic link is followed);
    /// `directoryPath` is used in messages only.
    public static func write<Bytes: Collection<UInt8>>(_ bytes: Bytes, name: String, in directory: Int32, directoryPath: String,
                                                       mode: mode_t = 0o644, replace: Bool = true) throws(SystemError) {
        try write(name: name, in: directory, directoryPath: directoryPath, mode: mode, replace: replace) { (fd, target) throws(SystemError) in
            try writeAll(fd, bytes, path: target)
        }
    }

    /// Writes `path` with `mode` from `body`, which writes the content to the open file it is given (with
    /// `writeAll(_:_:path:)`) as it is made: a file too large for memory, still all or nothing.
    public static func write(to path: String, mode: mode_t = 0o644, _ body: (Int32, String) throws(SystemError) -> Void) throws(SystemError) {
        let (directory, name) = split(path)
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open the directory", path: directory, errno: errno) }
        defer { close(fd) }
        try write(name: name, in: fd, directoryPath: directory, mode: mode, replace: true, body)
    }

    private static func write(name: String, in directory: Int32, directoryPath: String, mode: mode_t, replace: Bool,
                              _ body: (Int32, String) throws(SystemError) -> Void) throws(SystemError) {
        let target = directoryPath + "/" + name
        var temporary = ""
        var fd: Int32 = -1
        for _ in 0..<8 where fd < 0 {
            temporary = ".\(name).\(String(UInt64.random(in: 0...UInt64.max), radix: 36)).tmp"
            fd = openat(directory, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if fd < 0, errno != EEXIST { break }
        }
        guard fd >= 0 else { throw SystemError("create a file beside", path: target, errno: errno) }
        do throws(SystemError) {
            try body(fd, target)
            try sync(fd, path: target)
            close(fd)
            fd = -1
            if replace {
                guard renameat(directory, temporary, directory, name) == 0 else { throw SystemError("rename into", path: target, errno: errno) }
            } else {
                // A hard link fails when the name exists: whoever created it first wins, nothing is overwritten.
                guard linkat(directory, temporary, directory, name, 0) == 0 else { throw SystemError("create", path: target, errno: errno) }
                _ = unlinkat(directory, temporary, 0)
            }
        } catch {
            if fd >= 0 { close(fd) }
            _ = unlinkat(directory, temporary, 0)
            throw error
        }
        try sync(directory, path: directoryPath)
    }

    /// Deletes the temporary files an earlier ``write(_:name:in:directoryPath:mode:replace:)`` of `name` left in
    /// `directory` when its process was killed before the rename (`.<name>.<random>.tmp`). Call it after a
    /// write of `name` succeeded, in a folder that one writer owns.
    public static func removeLeftovers(of name: String, in directory: Int32) {
        let copy = dup(directory)
        guard copy >= 0, let listing = fdopendir(copy) else {
            if copy >= 0 { close(copy) }
            return
        }
        defer { closedir(listing) }
        rewinddir(listing)
        let prefix = ".\(name).", suffix = ".tmp"
        var stale: [String] = []
        while let entry = readdir(listing) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if entryName.hasPrefix(prefix), entryName.hasSuffix(suffix), entryName.count > prefix.count + suffix.count { stale.append(entryName) }
        }
        for entryName in stale { _ = unlinkat(directory, entryName, 0) }
    }

    /// Makes what was written to `fd` durable.
    public static func sync(_ fd: Int32, path: String) throws(SystemError) {
        while fsync(fd) != 0 {
            guard errno == EINTR else { throw SystemError("sync", path: path, errno: errno) }
        }
    }

    /// Makes the entries of the directory at `path` durable (after a rename or a new file in it).
    public static func syncDirectory(_ path: String) throws(SystemError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open the directory", path: path, errno: errno) }
        defer { close(fd) }
        try sync(fd, path: path)
    }

    /// Writes every byte of `bytes` to `fd`, retrying on EINTR.
    public static func writeAll<Bytes: Collection<UInt8>>(_ fd: Int32, _ bytes: Bytes, path: String) throws(SystemError) {
        var failure: SystemError?
        let done: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(SystemError) { try writeAll(fd, UnsafeRawBufferPointer(buffer), path: path) } catch { failure = error }
        }
        if done == nil {
            Array(bytes).withUnsafeBytes { raw in
                do throws(SystemError) { try writeAll(fd, raw, path: path) } catch { failure = error }
            }
        }
        if let failure { throw failure }
    }

    /// Writes every byte of `raw` to `fd`, retrying on EINTR.
    public static func writeAll(_ fd: Int32, _ raw: UnsafeRawBufferPointer, path: String) throws(SystemError) {
        guard let start = raw.baseAddress else { return }
        var offset = 0
        while offset < raw.count {
            let written = systemWrite(fd, start + offset, raw.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw SystemError("write", path: path, errno: errno)
            }
            guard written > 0 else { throw SystemError("write", path: path, errno: EIO) }
            offset += written
        }
    }

    /// The directory and the last component of `path` (`.` when it has no directory).
    static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
#endif
