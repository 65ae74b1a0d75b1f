import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A log file that rotates by size: when a line would take `path` past `maxBytes`, `path` becomes `path.1`
/// (`path.1` becomes `path.2`, … up to `keep` old files; the oldest is deleted) and a new `path` starts.
/// Lines are appended with `O_APPEND`, so several processes may share one file (each rotates on its own view
/// of the size; a line is never split). Mode 0600: logs are the operator's.
public final class RotatingLogFile: @unchecked Sendable {
    /// The file's path.
    public let path: String
    /// Size at which the file rotates.
    public let maxBytes: Int
    /// Old files kept.
    public let keep: Int
    private let lock = NSLock()
    private var fd: Int32 = -1
    private var size = 0

    /// Opens (creating) `path` for appending.
    public init(path: String, maxBytes: Int = 10 << 20, keep: Int = 5) throws(SystemError) {
        self.path = path
        self.maxBytes = max(maxBytes, 4096)
        self.keep = min(max(keep, 0), 100)
        try reopen()
    }

    private func reopen() throws(SystemError) {
        if fd >= 0 { close(fd) }
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SystemError("open the log file", path: path, errno: errno) }
        var info = stat()
        size = fstat(fd, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Appends `line` and a newline, rotating first when the file would grow past ``maxBytes``.
    /// A write that fails is dropped (logging never stops the program).
    public func append(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        lock.lock()
        defer { lock.unlock() }
        if size > 0, size + bytes.count > maxBytes { rotate() }
        guard fd >= 0 else { return }
        do throws(SystemError) { try AtomicFile.writeAll(fd, bytes, path: path) } catch { return }
        size += bytes.count
    }

    private func rotate() {
        if keep == 0 {
            unlink(path)
        } else {
            unlink("\(path).\(keep)")
            for generation in stride(from: keep - 1, through: 1, by: -1) { rename("\(path).\(generation)", "\(path).\(generation + 1)") }
            rename(path, "\(path).1")
        }
        try? reopen()
    }

    deinit {
        if fd >= 0 { close(fd) }
    }
}
