import Foundation
import SatchelBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A log file that rotates by size: when a line would take `path` past `maxBytes`, `path` becomes `path.1`
/// (`path.1` becomes `path.2`, … up to `keep` old files; the oldest is deleted) and a new `path` starts.
/// Lines are appended with `O_APPEND`, so several processes may share one file (each rotates on its own view
/// of the size; a line is never split). Mode 0600: logs are the operator's.
package final class RotatingLogFile: Sendable {
    /// The file's path.
    package let path: String
    /// Size at which the file rotates.
    package let maxBytes: Int
    /// Old files kept.
    package let keep: Int
    /// The open file and its size as this process sees it.
    private struct State {
        var fd: Int32 = -1
        var size = 0
    }

    private let state = Locked(State())

    /// Opens (creating) `path` for appending.
    package init(path: String, maxBytes: Int = 10 << 20, keep: Int = 5) throws(SystemError) {
        self.path = path
        self.maxBytes = max(maxBytes, 4096)
        self.keep = min(max(keep, 0), 100)
        var opened = State()
        try Self.reopen(&opened, path: path)
        state.withLock { $0 = opened }
    }

    private static func reopen(_ state: inout State, path: String) throws(SystemError) {
        if state.fd >= 0 { close(state.fd) }
        state.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard state.fd >= 0 else { throw SystemError("open the log file", path: path, errno: errno) }
        var info = stat()
        state.size = fstat(state.fd, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Appends `line` and a newline, rotating first when the file would grow past ``maxBytes``.
    /// A write that fails is dropped (logging never stops the program).
    package func append(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        state.withLock { state in
            if state.size > 0, state.size + bytes.count > maxBytes { rotate(&state) }
            guard state.fd >= 0 else { return }
            do throws(SystemError) { try AtomicFile.writeAll(state.fd, bytes, path: path) } catch { return }
            state.size += bytes.count
        }
    }

    private func rotate(_ state: inout State) {
        if keep == 0 {
            unlink(path)
        } else {
            unlink("\(path).\(keep)")
            for generation in stride(from: keep - 1, through: 1, by: -1) { rename("\(path).\(generation)", "\(path).\(generation + 1)") }
            rename(path, "\(path).1")
        }
        try? Self.reopen(&state, path: path)
    }

    deinit {
        let fd = state.current.fd
        if fd >= 0 { close(fd) }
    }
}
