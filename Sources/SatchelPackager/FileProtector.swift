#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SatchelBytes
import SatchelProtection
import SatchelSystem

/// Any file made a Satchel protected file (`ProtectedFileHeader`): read a chunk at a time, each sealed and written as
/// it comes, the output replaced all at once (a crash leaves the old file or none, never a part).
public enum FileProtector {
    /// Protects `input` into `output` under `key` (its key ID in the header); answers the header written. With
    /// `keyFile`, the key is written there too (mode 0600, as `satchel package` writes a package's keys), once the
    /// output is in place.
    @discardableResult
    public static func protect(input: String, output: String, key contentKey: ContentKey, contentType: String,
                               chunkSize: Int = ProtectedFileHeader.defaultChunkSize, metadata: [String: String] = [:],
                               keyFile: String? = nil) throws(PackagerError) -> ProtectedFileHeader {
        let staged = try keyFile.map { path throws(PackagerError) in
            try StagedKeyFile(KeyFile(scheme: "satchel-file", fairPlayURI: nil, keys: [(contentKey, 0)]), destination: path)
        }
        do {
            let header = try protect(input: input, output: output, keyID: contentKey.keyID, key: contentKey.key, contentType: contentType,
                                     chunkSize: chunkSize, metadata: metadata)
            try staged?.commit()
            return header
        } catch {
            staged?.discard()
            throw error
        }
    }

    private static func protect(input: String, output: String, keyID: KeyID, key: SecretBytes, contentType: String,
                                chunkSize: Int, metadata: [String: String]) throws(PackagerError) -> ProtectedFileHeader {
        let fd = open(input, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .input(file: input, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { throw .input(file: input, reason: "not a regular file") }
        let header: ProtectedFileHeader
        do {
            header = try ProtectedFileHeader(keyID: keyID, chunkSize: chunkSize, plainSize: UInt64(status.st_size), contentType: contentType,
                                             metadata: metadata).sealed(with: key)
        } catch {
            throw .invalidOptions(error.description)
        }
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        do throws(SystemError) {
            try AtomicFile.write(to: output) { (out, path) throws(SystemError) in
                try AtomicFile.writeAll(out, header.bytes(), path: path)
                for index in 0..<header.chunkCount {
                    let length = header.plainLength(ofChunk: index)
                    guard try readExactly(fd, into: &buffer, count: length) == length else {
                        throw SystemError("read all of", path: input, errno: EIO)  // it shrank while read
                    }
                    let sealed: [UInt8]
                    do { sealed = try ProtectedChunks.seal(Array(buffer[0..<length]), index: index, header: header, key: key) } catch {
                        throw SystemError("seal a chunk for", path: path, errno: EINVAL)
                    }
                    try AtomicFile.writeAll(out, sealed, path: path)
                }
            }
        } catch {
            throw .output(error.description)
        }
        return header
    }

    /// Reads up to `count` bytes into `buffer`, retrying short reads; answers how many came (fewer only at the end).
    private static func readExactly(_ fd: Int32, into buffer: inout [UInt8], count: Int) throws(SystemError) -> Int {
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return read(fd, base + done, count - done)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw SystemError("read", path: "the input", errno: errno)
            }
            if n == 0 { break }
            done += n
        }
        return done
    }
}
