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

    /// Writes `bytes` to `relativePath` inside the package.
    func write(_ bytes: [UInt8], to relativePath: String, mode: Int? = nil) throws(PackagerError) {
        let url = temporary.appendingPathComponent(relativePath)
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            var attributes: [FileAttributeKey: Any]?
            if let mode { attributes = [.posixPermissions: mode] }
            guard FileManager.default.createFile(atPath: url.path, contents: Data(bytes), attributes: attributes) else {
                throw PackagerError.output("cannot write \(relativePath)")
            }
        } catch let error as PackagerError {
            throw error
        } catch {
            throw .output("cannot write \(relativePath)")
        }
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
