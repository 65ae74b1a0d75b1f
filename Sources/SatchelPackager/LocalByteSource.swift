#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import SatchelProtection
import SatchelSystem

/// A local file as a protected file's byte source: opened once, read with `pread` where asked (never a link
/// followed at its last component), closed when the source goes.
public final class LocalByteSource: ProtectedByteSource, @unchecked Sendable {
    private let fd: Int32
    private let path: String

    /// Opens `path` for reading.
    public init(path: String) throws(SystemError) {
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw SystemError("open", path: path, errno: errno) }
        self.path = path
    }

    deinit { close(fd) }

    public func size() async throws -> UInt64 {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw SystemError("read the size of", path: path, errno: errno) }
        return UInt64(status.st_size)
    }

    public func read(offset: UInt64, count: Int) async throws -> [UInt8] {
        guard count > 0, offset <= UInt64(Int64.max) else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = bytes.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return pread(fd, base + done, count - done, off_t(offset) + off_t(done))
            }
            if n < 0, errno == EINTR { continue }
            if n < 0 { throw SystemError("read", path: path, errno: errno) }
            if n == 0 { break }
            done += n
        }
        return Array(bytes.prefix(done))
    }
}
