import Foundation
import SatchelBytes
import SatchelStreams
import SatchelSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The downloaded files, under `<root>/<asset-id>/` at their origin-relative paths. A file at its final
/// path is complete (it is only ever created by renaming a verified `.part` file); `<path>.part` is a
/// partial download whose size says where to resume. So the store itself answers "which bytes are
/// missing", and the index needs no per-file ledger.
package struct AssetStore: AssetStoring {
    /// The directory holding every asset's directory.
    package let root: String
    /// Plans read or written by this store (they never change once written).
    private let plans = PlanCache()
    /// The folder inside each asset's folder that holds the engine's own files (the plan); no downloaded file
    /// is ever stored under this name (`LocalPath` renames such a path).
    package static let metadataFolder = LocalPath.metadataFolder
    static let planPath = metadataFolder + "/plan.json"

    /// Creates a store rooted at `root`.
    package init(root: String) {
        self.root = root
    }

    /// Writes the asset's plan (files and manifest texts) into its folder with the crash-safe writer.
    package func writePlan(_ id: String, _ plan: DownloadPlan) throws(DownloadFailure) {
        guard let (folder, name) = try folder(id, of: Self.planPath, create: true, url: Self.planPath) else {
            throw .fileSystem(path: path(id, Self.planPath), message: "the folder is missing")
        }
        try folder.writeAtomically(name, plan.encodedJSON())
        plans.put(id, plan)
    }

    /// The asset's plan, nil when its folder holds none. A plan that cannot be read or decoded is a failure.
    package func readPlan(_ id: String) throws(DownloadFailure) -> DownloadPlan? {
        if let cached = plans.get(id) { return cached }
        guard let (folder, name) = try folder(id, of: Self.planPath, create: false, url: Self.planPath), folder.size(name) != nil else { return nil }
        let bytes = try folder.readAll(name)
        guard let plan = try? JSONCoding.decoder().decode(DownloadPlan.self, from: Data(bytes)) else {
            throw .fileSystem(path: path(id, Self.planPath), message: "the plan is damaged")
        }
        plans.put(id, plan)
        return plan
    }

    /// True for IDs that are safe directory names: 1–128 of `A–Z a–z 0–9 . _ -`, not `.` or `..`.
    package static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.count <= 128 && id != "." && id != ".."
            && id.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-".unicodeScalars.contains($0) }
    }

    /// The asset's directory.
    package func directory(_ id: String) -> String { root + "/" + id }

    /// The final path of a file of the asset (for people and players; the store itself opens files only
    /// through ``folder(_:of:create:url:)``).
    package func path(_ id: String, _ localPath: String) -> String { directory(id) + "/" + localPath }

    /// The directory holding `localPath` inside the asset's folder, reached without following links, and
    /// the file's name in it. `localPath` must be confined (`LocalPath/isConfined(_:)`): anything else is
    /// `invalidContent` for `url` and nothing is opened. Without `create`, nil when a directory is missing.
    package func folder(_ id: String, of localPath: String, create: Bool, url: String) throws(DownloadFailure) -> (folder: AssetFolder, name: String)? {
        guard Self.isValidID(id), LocalPath.isConfined(localPath) else {
            throw .invalidContent(url: url, reason: "its local path would leave the asset's folder")
        }
        var components = localPath.split(separator: "/")
        guard let name = components.popLast() else { throw .invalidContent(url: url, reason: "empty local path") }
        guard let folder = try AssetFolder.open(root: root, asset: id, components: components[...], create: create, url: url) else { return nil }
        return (folder, String(name))
    }

    /// What is on disk for a plan.
    package struct Scan: Sendable {
        /// Per resource: complete.
        package var complete: [Bool]
        /// Bytes of complete and partial files.
        package var bytes: Int64
        /// Per resource: bytes on disk (complete or partial).
        package var sizes: [Int64]
    }

    /// Which of the plan's files are complete, and how many bytes are on disk. A file is counted only as a
    /// regular file inside the asset's folder, reached without following a link.
    package func scan(_ id: String, plan: DownloadPlan) -> Scan {
        var scan = Scan(complete: [], bytes: 0, sizes: [])
        scan.complete.reserveCapacity(plan.resources.count)
        scan.sizes.reserveCapacity(plan.resources.count)
        var folders: [Substring: AssetFolder?] = [:]  // each directory opened once
        for resource in plan.resources {
            var size: Int64?, partial: Int64?
            if LocalPath.isConfined(resource.localPath), Self.isValidID(id) {
                let slash = resource.localPath.lastIndex(of: "/")
                let directory = slash.map { resource.localPath[..<$0] } ?? ""
                let name = String(slash.map { resource.localPath[resource.localPath.index(after: $0)...] } ?? resource.localPath[...])
                if folders[directory] == nil {
                    let components = directory.isEmpty ? [] : directory.split(separator: "/")
                    folders[directory] = .some(try? AssetFolder.open(root: root, asset: id, components: components[...], create: false, url: resource.url))
                }
                if let folder = folders[directory] ?? nil {
                    size = folder.size(name)
                    if size == nil { partial = folder.size(name + ".part") }
                }
            }
            scan.complete.append(size != nil)
            scan.sizes.append(size ?? partial ?? 0)
            scan.bytes += size ?? partial ?? 0
        }
        return scan
    }

    /// Stores a complete file fetched outside the engine (the playback proxy filling a partly downloaded asset
    /// from the origin): written atomically, and only when the file is not there yet. Answers whether it was.
    package func keepFetched(_ id: String, path localPath: String, bytes: [UInt8]) throws(DownloadFailure) -> Bool {
        guard let (folder, name) = try folder(id, of: localPath, create: true, url: localPath), folder.size(name) == nil else { return false }
        try folder.writeAtomically(name, bytes)
        return true
    }

    /// Appends `bytes`, fetched from the origin at `offset` of `localPath`, to that file's partial download when they
    /// continue it exactly (the part is `offset` bytes long, the file not complete) and come from the same version of
    /// the file (the total length the part started from, when both are known). Answers whether they were kept.
    package func extendPart(_ id: String, path localPath: String, offset: Int64, bytes: [UInt8], total: Int64?) throws(DownloadFailure) -> Bool {
        guard !bytes.isEmpty, let (folder, name) = try folder(id, of: localPath, create: false, url: localPath), folder.size(name) == nil else { return false }
        let part = PartFile(folder: folder, name: name + ".part", final: name)
        if let recorded = part.totalLength(), let total, recorded != total { return false }
        let fd = folder.openFile(part.name, O_WRONLY | O_APPEND)
        guard fd >= 0 else { return false }  // no part: nothing to continue
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, Int64(info.st_size) == offset else { return false }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw part.failure() }
            written += count
        }
        return true
    }

    /// Writes the plan's manifests (atomically: a temporary file renamed into place).
    package func writeManifests(_ id: String, plan: DownloadPlan) throws(DownloadFailure) {
        for manifest in plan.manifests {
            guard let (folder, name) = try folder(id, of: manifest.path, create: true, url: manifest.path) else { continue }
            try folder.writeAtomically(name, Array(manifest.text.utf8))
        }
    }

    /// Creates every directory the plan's files go into (once each, not once per file).
    package func makeDirectories(_ id: String, plan: DownloadPlan) throws(DownloadFailure) {
        var made = Set<Substring>()
        for resource in plan.resources {
            let directory = resource.localPath.lastIndex(of: "/").map { resource.localPath[..<$0] } ?? ""
            if made.insert(directory).inserted { _ = try folder(id, of: resource.localPath, create: true, url: resource.url) }
        }
    }

    /// Deletes an asset's files (links inside are removed, never followed).
    /// With `keepingPlan`, the plan stays (an expired asset is still listed, with its files gone).
    package func delete(_ id: String, keepingPlan: Bool) throws(DownloadFailure) {
        guard Self.isValidID(id) else { return }
        var info = stat()
        guard lstat(directory(id), &info) == 0 else { return }  // nothing on disk
        if !keepingPlan { plans.remove(id) }
        do {
            guard keepingPlan else { return try FileManager.default.removeItem(atPath: directory(id)) }
            for entry in try FileManager.default.contentsOfDirectory(atPath: directory(id)) where entry != Self.metadataFolder {
                try FileManager.default.removeItem(atPath: directory(id) + "/" + entry)
            }
        } catch {
            throw .fileSystem(path: directory(id), message: "cannot delete the asset's files")
        }
    }

    /// Bytes used by every asset (regular files only; a link is not followed).
    package func usage() -> Int64 {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return 0 }
        var total: Int64 = 0
        while let relative = walker.nextObject() as? String {
            var info = stat()
            guard lstat(root + "/" + relative, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            total += Int64(info.st_size)
        }
        return total
    }

    /// The typed failure for the current `errno`.
    static func failure(path: String) -> DownloadFailure {
        failure(SystemError("write", path: path, errno: errno))
    }

    /// The download failure for a file-system error: a full disk, or any other.
    static func failure(_ error: SystemError) -> DownloadFailure {
        error.isDiskFull ? .diskFull(path: error.path) : .fileSystem(path: error.path, message: String(cString: strerror(error.errno)))
    }
}
