import Foundation

/// A package being built in a temporary directory beside its destination, renamed into place at the end.
struct PackageDirectory {
    let destination: URL
    let temporary: URL

    init(destination path: String) throws(PackagerError) {
        destination = URL(fileURLWithPath: path).standardizedFileURL
        let parent = destination.deletingLastPathComponent()
        temporary = parent.appendingPathComponent(".\(destination.lastPathComponent).partial-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: false)
        } catch {
            throw .output("cannot create a working directory in \(parent.path)")
        }
    }

    /// Writes `bytes` to `relativePath` inside the package, straight from the array's buffer.
    /// No per-file rename is needed: the whole directory is renamed into place by ``commit()``.
    func write(_ bytes: [UInt8], to relativePath: String, mode: Int = 0o644) throws(PackagerError) {
        let url = temporary.appendingPathComponent(relativePath)
        let parent = url.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: parent.path) {
            do { try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true) } catch {
                throw .output("cannot create \(parent.lastPathComponent)")
            }
        }
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode))
        guard descriptor >= 0 else { throw .output("cannot create \(relativePath): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let failure: Int32? = bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return nil }
            var written = 0
            while written < buffer.count {
                let result = Foundation.write(descriptor, base + written, buffer.count - written)
                if result > 0 { written += result } else if errno != EINTR { return errno }
            }
            return nil
        }
        if let failure { throw .output("cannot write \(relativePath): \(String(cString: strerror(failure)))") }
    }

    /// Text convenience.
    func write(_ text: String, to relativePath: String) throws(PackagerError) {
        try write(Array(text.utf8), to: relativePath)
    }

    /// Moves the finished package into place, replacing any previous package there.
    func commit() throws(PackagerError) {
        let manager = FileManager.default
        let old = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).old-\(UUID().uuidString)")
        let hadOld = manager.fileExists(atPath: destination.path)
        do {
            if hadOld { try manager.moveItem(at: destination, to: old) }
            try manager.moveItem(at: temporary, to: destination)
        } catch {
            if hadOld, !manager.fileExists(atPath: destination.path) { try? manager.moveItem(at: old, to: destination) }
            throw .output("cannot move the package into \(destination.path)")
        }
        if hadOld { try? manager.removeItem(at: old) }
    }

    /// Removes the working directory after a failure.
    func discard() {
        try? FileManager.default.removeItem(at: temporary)
    }
}
