import Foundation
import SatchelSystem

/// File reading and crash-safe writing for the command-line tool.
enum FileIO {
    /// Reads a whole file, with an error that names the file.
    static func read(_ path: String, what: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CLIError("cannot read \(what) file \(path)")
        }
        return Array(data)
    }

    /// Writes `bytes` to `path` with `mode` through the crash-safe writer: a reader never sees a half-written file.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws {
        do throws(SystemError) {
            try AtomicFile.write(bytes, to: path, mode: mode)
        } catch {
            throw CLIError(error.description)
        }
    }
}
