import SatchelBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a file-system call failed: the operation, the path and the system's reason. Never carries file contents.
public struct SystemError: ProblemConvertible, Equatable, Sendable {
    /// What was being done (`create`, `write`, `sync`, `rename`, `open`).
    public let operation: String
    /// The path concerned.
    public let path: String
    /// The `errno` value.
    public let errno: Int32

    /// Creates the error for `operation` on `path` with the current or given `errno`.
    public init(_ operation: String, path: String, errno: Int32) {
        self.operation = operation
        self.path = path
        self.errno = errno
    }

    /// True when the disk (or the user's quota) is full.
    public var isDiskFull: Bool { errno == ENOSPC || errno == EDQUOT }

    /// `disk-full`, or `file-system` for every other failure.
    public var code: String { isDiskFull ? "disk-full" : "file-system" }

    public var description: String {
        "cannot \(operation) \(path): \(String(cString: strerror(errno)))"
    }
}
