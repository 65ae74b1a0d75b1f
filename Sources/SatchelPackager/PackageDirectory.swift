import Foundation
import SatchelBytes
import SatchelSystem

/// A package being built in a temporary directory beside its destination, renamed into place at the end.
struct PackageDirectory {
    let destination: URL
    let temporary: URL
    /// Files are synced in the background while the next ones are produced; ``commit()`` waits for them.
    private let syncer = BackgroundSync()

    init(destination path: String) throws(PackagerError) {
        destination = URL(fileURLWithPath: path).standardizedFileURL
        let parent = destination.deletingLastPathComponent()
        temporary = parent.appendingPathComponent(".\(destination.lastPathComponent).partial-\(SecureRandom.uuid().uuidString)")
        do {
            try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(at: temporary, withIntermediateDirectories: false)
        } catch {
            throw .output("cannot create a working directory in \(parent.path)")
        }
    }

    /// Writes `bytes` to `relativePath` inside the package; the file is fsynced in the background (``BackgroundSync``)
    /// and ``commit()`` waits for every sync; the whole directory is then made durable and renamed into place by ``commit()``, so a package is
    /// either all there or not there, also after a power cut.
    func write(_ bytes: [UInt8], to relativePath: String, mode: Int = 0o644) throws(PackagerError) {
        let url = try place(relativePath)
        do throws(SystemError) {
            try syncer.write(bytes, to: url.path, mode: mode_t(mode))
        } catch {
            throw .output("cannot write \(relativePath): \(String(cString: strerror(error.errno)))")
        }
    }

    /// Writes `header` and the first `count` bytes of `payload` to `relativePath` like ``write(_:to:mode:)``, but on a
    /// background thread: `payload` goes back to `pool` once written, so the caller fills the next buffer while the
    /// kernel copies this one.
    func write(_ header: [UInt8] = [], handing payload: consuming [UInt8], count: Int, to relativePath: String,
               returningTo pool: BufferPool) throws(PackagerError) {
        let url = try place(relativePath)
        do throws(SystemError) {
            try syncer.write(header, payload, count: count, to: url.path, returningTo: pool)
        } catch {
            throw .output("cannot write \(relativePath): \(String(cString: strerror(error.errno)))")
        }
    }

    /// Writes whole files, `prepare` first changing their bytes on the writer's thread (``BackgroundSync``'s batch write).
    func write(handing payloads: consuming [[UInt8]], to relativePaths: [String], returningTo pool: BufferPool,
               prepare: @escaping @Sendable (inout [[UInt8]]) throws -> Void) throws(PackagerError) {
        var paths: [String] = []
        for relativePath in relativePaths { paths.append(try place(relativePath).path) }
        do throws(SystemError) {
            try syncer.write(payloads, to: paths, returningTo: pool, prepare: prepare)
        } catch {
            throw .output("cannot write \(relativePaths.first ?? "a segment"): \(String(cString: strerror(error.errno)))")
        }
    }

    /// The URL of `relativePath` in the working directory, its folder created.
    private func place(_ relativePath: String) throws(PackagerError) -> URL {
        let url = temporary.appendingPathComponent(relativePath)
        let parent = url.deletingLastPathComponent()
        if !FileManager.default.fileExists(atPath: parent.path) {
            do { try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true) } catch {
                throw .output("cannot create \(parent.lastPathComponent)")
            }
        }
        return url
    }

    /// Text convenience.
    func write(_ text: String, to relativePath: String) throws(PackagerError) {
        try write(Array(text.utf8), to: relativePath)
    }

    /// Moves the finished package into place, replacing any previous package there.
    func commit() throws(PackagerError) {
        let manager = FileManager.default
        do throws(SystemError) { try syncer.wait() } catch {
            throw .output("cannot make \(error.path) durable: \(String(cString: strerror(error.errno)))")
        }
        // The entries of every directory of the package are durable before the package takes its name.
        var directories = [temporary.path]
        if let walker = manager.enumerator(atPath: temporary.path) {
            while let relative = walker.nextObject() as? String {
                var isDirectory: ObjCBool = false
                let path = temporary.path + "/" + relative
                if manager.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue { directories.append(path) }
            }
        }
        for directory in directories {
            do throws(SystemError) { try AtomicFile.syncDirectory(directory) } catch {
                throw .output("cannot make \(directory) durable: \(String(cString: strerror(error.errno)))")
            }
        }
        let old = destination.deletingLastPathComponent().appendingPathComponent(".\(destination.lastPathComponent).old-\(SecureRandom.uuid().uuidString)")
        let hadOld = manager.fileExists(atPath: destination.path)
        do {
            if hadOld { try manager.moveItem(at: destination, to: old) }
            try manager.moveItem(at: temporary, to: destination)
        } catch {
            if hadOld, !manager.fileExists(atPath: destination.path) { try? manager.moveItem(at: old, to: destination) }
            throw .output("cannot move the package into \(destination.path)")
        }
        do throws(SystemError) {
            try AtomicFile.syncDirectory(destination.deletingLastPathComponent().path)  // the rename survives a crash
        } catch {
            throw .output("the package is in place but its rename may not survive a crash: \(String(cString: strerror(error.errno)))")
        }
        if hadOld { try? manager.removeItem(at: old) }
    }

    /// Removes the working directory after a failure.
    func discard() {
        try? syncer.wait()
        try? FileManager.default.removeItem(at: temporary)
    }
}
