import Foundation
import SatchelBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A regular file opened below a folder without following any symbolic link: the folder is opened as given,
/// then each component of the relative path with `O_NOFOLLOW` (`openat`), so a link planted anywhere on the way
/// — `assets/ID → /`, `video/up → ..`, `segment.ts → ../../device-key.pem` — is refused, never followed. The
/// file is opened once; its size and type come from that open file (`fstat`), and every read is a `pread` of
/// it, so what is served is what was checked. Closed when released.
public final class ConfinedFile: Sendable {
    /// Why a file could not be opened.
    public enum Failure: ProblemConvertible, Equatable {
        /// Nothing is there.
        case missing
        /// A symbolic link stands on the path (refused, not followed).
        case link
        /// It is not a regular file (a folder, a device, a pipe).
        case notRegular
        /// The path is not a relative path inside the folder (empty, absolute, `.` or `..` components, NUL).
        case escapes
        /// The system refused (permissions, too many open files): the `errno`.
        case system(Int32)

        public var code: String {
            switch self {
            case .missing: "not-found"
            case .link: "link-refused"
            case .notRegular: "not-a-file"
            case .escapes: "path-escapes"
            case .system: "file-system"
            }
        }

        public var httpStatus: Int { if case .system = self { 500 } else { 404 } }

        public var description: String {
            switch self {
            case .missing: "no such file"
            case .link: "a symbolic link stands on the path (never followed)"
            case .notRegular: "not a regular file"
            case .escapes: "the path leaves its folder"
            case let .system(code): "the system refused: \(String(cString: strerror(code)))"
            }
        }
    }

    /// The open file.
    public let descriptor: Int32
    /// Its size when opened.
    public let size: Int64
    /// Its modification time when opened.
    public let modified: timespec
    /// Its permission bits when opened.
    public let mode: mode_t
    /// Its path relative to the folder it was opened below (for messages).
    public let name: String

    private init(descriptor: Int32, size: Int64, modified: timespec, mode: mode_t, name: String) {
        self.descriptor = descriptor
        self.size = size
        self.modified = modified
        self.mode = mode
        self.name = name
    }

    deinit { close(descriptor) }

    /// Opens `relative` (components separated by `/`) below `folder` without following a link.
    public static func open(_ relative: String, below folder: String) throws(Failure) -> ConfinedFile {
        try checkRelative(relative)
        let base = systemOpen(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard base >= 0 else { throw failure(errno) }
        defer { close(base) }
        return try open(relative, in: base)
    }

    /// Throws ``Failure/escapes`` unless `relative` is a relative path of named components.
    static func checkRelative(_ relative: String) throws(Failure) {
        let components = relative.split(separator: "/", omittingEmptySubsequences: false)
        guard !relative.isEmpty, !relative.utf8.contains(0),
              components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && $0.utf8.count <= 255 }) else { throw .escapes }
    }

    /// Opens `relative` below the open folder `base` (left open) without following a link.
    static func open(_ relative: String, in base: Int32) throws(Failure) -> ConfinedFile {
        try checkRelative(relative)
        let components = relative.split(separator: "/", omittingEmptySubsequences: false)
        var directory = base
        for component in components.dropLast() {
            let next = openat(directory, String(component), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            let code = errno
            // A link where a folder should be fails as "not a folder" on Linux: tell it from a file there.
            let link = next < 0 && isLink(String(component), in: directory)
            if directory != base { close(directory) }
            guard next >= 0 else { throw link ? .link : failure(code) }
            directory = next
        }
        // O_NONBLOCK: a pipe planted under the name does not hold the open; only a regular file is kept.
        let file = openat(directory, String(components.last ?? ""), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        let code = errno
        if directory != base { close(directory) }
        guard file >= 0 else { throw failure(code) }
        var info = stat()
        guard fstat(file, &info) == 0 else {
            let code = errno
            close(file)
            throw failure(code)
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            close(file)
            throw .notRegular
        }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        return ConfinedFile(descriptor: file, size: Int64(info.st_size), modified: modified, mode: info.st_mode & 0o7777, name: relative)
    }

    /// ``open(_:below:)``, with nil when nothing is there.
    public static func openIfPresent(_ relative: String, below folder: String) throws(Failure) -> ConfinedFile? {
        do { return try open(relative, below: folder) } catch .missing { return nil }
    }

    /// Exactly `count` bytes at `offset` into `pointer` (a file that shrank while read is an error, never a short read).
    public func read(into pointer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(Failure) {
        var filled = 0
        while filled < pointer.count {
            let got = pread(descriptor, pointer.baseAddress.map { $0 + filled }, pointer.count - filled, off_t(offset) + off_t(filled))
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw got < 0 ? .system(errno) : .system(EIO) }
            filled += got
        }
    }

    /// Exactly `count` bytes at `offset`.
    public func read(_ count: Int, at offset: Int64) throws(Failure) -> [UInt8] {
        var failure: Failure?
        let count = max(count, 0)
        let bytes = [UInt8](unsafeUninitializedCapacity: count) { pointer, initialized in
            initialized = 0
            do throws(Failure) {
                try read(into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: pointer[0..<count])), at: offset)
                initialized = count
            } catch { failure = error }
        }
        if let failure { throw failure }
        return bytes
    }

    /// The whole file as it was when opened; a file larger than `limit` is refused (`nil`).
    public func readAll(limit: Int64) throws(Failure) -> [UInt8]? {
        guard size <= limit else { return nil }
        return try read(Int(size), at: 0)
    }

    static func isLink(_ name: String, in directory: Int32) -> Bool {
        var info = stat()
        return fstatat(directory, name, &info, AT_SYMLINK_NOFOLLOW) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    static func failure(_ code: Int32) -> Failure {
        switch code {
        case ENOENT: .missing
        case ELOOP, EMLINK: .link  // O_NOFOLLOW on a link: ELOOP on Linux, EMLINK on some BSDs
        case ENOTDIR: .missing  // a file where a folder should be
        default: .system(code)
        }
    }
}

#if canImport(Glibc)
func systemOpen(_ path: String, _ flags: Int32) -> Int32 { Glibc.open(path, flags) }
#elseif canImport(Darwin)
func systemOpen(_ path: String, _ flags: Int32) -> Int32 { Darwin.open(path, flags) }
#endif
