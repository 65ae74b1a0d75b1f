import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The downloaded files, under `<root>/<asset-id>/` at their origin-relative paths. A file at its final
/// path is complete (it is only ever created by renaming a verified `.part` file); `<path>.part` is a
/// partial download whose size says where to resume. So the store itself answers "which bytes are
/// missing", and the index needs no per-file ledger.
public struct AssetStore: Sendable {
    /// The directory holding every asset's directory.
    public let root: String

    /// Creates a store rooted at `root`.
    public init(root: String) {
        self.root = root
    }

    /// True for IDs that are safe directory names: 1–128 of `A–Z a–z 0–9 . _ -`, not `.` or `..`.
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 128 && id != "." && id != ".."
            && id.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-".unicodeScalars.contains($0) }
    }

    /// The asset's directory.
    public func directory(_ id: String) -> String { root + "/" + id }

    /// The final path of a file of the asset.
    public func path(_ id: String, _ localPath: String) -> String { directory(id) + "/" + localPath }

    /// The partial-download path of a file.
    func partPath(_ id: String, _ localPath: String) -> String { path(id, localPath) + ".part" }

    /// What is on disk for a plan.
    public struct Scan: Sendable {
        /// Per resource: complete.
        public var complete: [Bool]
        /// Bytes of complete and partial files.
        public var bytes: Int64
        /// Per resource: bytes on disk (complete or partial).
        public var sizes: [Int64]
    }

    /// Which of the plan's files are complete, and how many bytes are on disk.
    public func scan(_ id: String, plan: DownloadPlan) -> Scan {
        var scan = Scan(complete: [], bytes: 0, sizes: [])
        scan.complete.reserveCapacity(plan.resources.count)
        for resource in plan.resources {
            if let size = Self.size(path(id, resource.localPath)) {
                scan.complete.append(true)
                scan.sizes.append(size)
            } else {
                scan.complete.append(false)
                scan.sizes.append(Self.size(partPath(id, resource.localPath)) ?? 0)
            }
            scan.bytes += scan.sizes[scan.sizes.count - 1]
        }
        return scan
    }

    /// The size of a regular file, nil when there is none.
    static func size(_ path: String) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Writes the plan's manifests (atomically: a temporary file renamed into place).
    func writeManifests(_ id: String, plan: DownloadPlan) throws(DownloadFailure) {
        for manifest in plan.manifests {
            let target = path(id, manifest.path)
            try makeParent(of: target)
            let temporary = target + ".tmp"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard fd >= 0 else { throw Self.failure(path: temporary) }
            var bytes = Array(manifest.text.utf8)[...]
            while !bytes.isEmpty {
                let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else {
                    let failure = Self.failure(path: temporary)
                    close(fd)
                    unlink(temporary)
                    throw failure
                }
                bytes = bytes.dropFirst(written)
            }
            close(fd)
            guard rename(temporary, target) == 0 else { throw Self.failure(path: target) }
        }
    }

    /// Creates every directory the plan's files go into (once each, not once per file).
    func makeDirectories(_ id: String, plan: DownloadPlan) throws(DownloadFailure) {
        var made = Set<String>()
        for resource in plan.resources {
            let target = path(id, resource.localPath)
            let parent = (target as NSString).deletingLastPathComponent
            if made.insert(parent).inserted { try makeParent(of: target) }
        }
    }

    /// Creates the directory that will hold `path`.
    func makeParent(of path: String) throws(DownloadFailure) {
        let parent = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
        } catch {
            throw .fileSystem(path: parent, message: "cannot create the directory")
        }
    }

    /// Deletes an asset's files.
    public func delete(_ id: String) {
        try? FileManager.default.removeItem(atPath: directory(id))
    }

    /// Bytes used by every asset.
    public func usage() -> Int64 {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return 0 }
        var total: Int64 = 0
        while let relative = walker.nextObject() as? String {
            total += Self.size(root + "/" + relative) ?? 0
        }
        return total
    }

    /// The typed failure for the current `errno`.
    static func failure(path: String) -> DownloadFailure {
        let code = errno
        if code == ENOSPC || code == EDQUOT { return .diskFull(path: path) }
        return .fileSystem(path: path, message: String(cString: strerror(code)))
    }
}
