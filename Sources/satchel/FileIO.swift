import Foundation

/// File reading and crash-safe writing for the command-line tool.
enum FileIO {
    /// Reads a whole file, with an error that names the file.
    static func read(_ path: String, what: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read \(what) file \(path)")
        }
        return Array(data)
    }

    /// Writes `bytes` to a temporary file beside `path` with `mode`, then renames it into place,
    /// so a reader never sees a half-written file.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp").path
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL, mode)
        guard descriptor >= 0 else { throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))") }
        var written = 0
        let ok = bytes.withUnsafeBytes { buffer -> Bool in
            guard let base = buffer.baseAddress else { return fsync(descriptor) == 0 }  // empty file
            while written < buffer.count {
                let result = Foundation.write(descriptor, base + written, buffer.count - written)
                if result <= 0 { return false }
                written += result
            }
            return fsync(descriptor) == 0
        }
        close(descriptor)
        guard ok, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CLIError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
