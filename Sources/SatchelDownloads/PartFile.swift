import AsyncHTTPClient
import CSatchelSystem
import Foundation
import NIOPosix
import SatchelStreams
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file being downloaded, as `<name>.part` beside where it goes: its size says where to resume, and its extended
/// attributes what version of the origin's file it started from (where the file system keeps user attributes).
struct PartFile {
    let folder: AssetFolder
    let name: String
    let final: String

    var path: String { folder.path + "/" + name }

    func failure() -> DownloadFailure { AssetStore.failure(path: path) }

    /// Empties the part (the origin sent a different file, or ignored the range).
    func restart(have: inout Int64, budget: DownloadBudget, progress: LiveProgress) throws(DownloadFailure) {
        let fd = folder.openFile(name, O_WRONLY | O_TRUNC)
        guard fd >= 0 || errno == ENOENT else { throw failure() }
        if fd >= 0 { close(fd) }
        budget.release(have)
        progress.add(-have)
        have = 0
    }

    /// The validator the part was started from.
    func validator() -> String? { attribute(Self.validatorAttribute) }

    /// The file's total length when the part was started.
    func totalLength() -> Int64? { attribute(Self.lengthAttribute).flatMap { Int64($0) } }

    private func attribute(_ name: String) -> String? {
        let fd = folder.openFile(self.name, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = satchel_fgetxattr(fd, name, &buffer, buffer.count)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// The extended attribute holding a part's validator. Where the file system has no user attributes
    /// a part resumes without If-Range, as plain HTTP Range resumption does.
    static let validatorAttribute = "user.satchel.validator"
    /// The extended attribute holding the file's total length when its part was started.
    static let lengthAttribute = "user.satchel.length"

    /// What identifies a version of a file: a strong ETag, else Last-Modified.
    static func validator(of response: HTTPClientResponse) -> String? {
        response.headers.first(name: "etag").flatMap { $0.hasPrefix("W/") ? nil : $0 } ?? response.headers.first(name: "last-modified")
    }

    /// True when a 206 answering a resume of this part is of another version than the part: its validator differs
    /// from the one the part was started from (compared only when the part has one), or its total from the part's.
    func isOtherVersion(_ response: HTTPClientResponse, total: Int64?) -> Bool {
        if let recorded = validator(), let current = Self.validator(of: response), recorded != current { return true }
        if let recorded = totalLength(), let total, recorded != total { return true }
        return false
    }

    /// Sets the extended attribute `name` of `fd` to `value` (nil, or more than 512 bytes: removes it).
    static func setAttribute(_ name: String, _ value: String?, on fd: Int32) {
        guard let value, value.utf8.count <= 512 else {
            _ = satchel_fremovexattr(fd, name)
            return
        }
        _ = Array(value.utf8).withUnsafeBytes { satchel_fsetxattr(fd, name, $0.baseAddress, $0.count) }
    }
}

extension PartFile {
    /// `fsync` of the part's `fd` on NIO's blocking-I/O pool, so the few threads that run tasks keep fetching meanwhile.
    func sync(_ fd: Int32) async throws(DownloadFailure) {
        let path = path
        let result: Result<Void, DownloadFailure>
        do {
            result = try await NIOThreadPool.singleton.runIfActive { () -> Result<Void, DownloadFailure> in
                do throws(DownloadFailure) { try AssetFolder.sync(fd, path: path) } catch { return .failure(error) }
                return .success(())
            }
        } catch {
            result = .failure(.fileSystem(path: path, message: "the I/O thread pool is not running"))
        }
        try result.get()
    }

    /// Renames the whole part into place as file `index` of the plan. A part whose size disagrees with what the origin
    /// announced for this response (Content-Length, or a 206's total) is not whole: short, it stays to be resumed;
    /// long, it is emptied; either way the attempt fails and is retried ("Final file segment size disagrees with
    /// server-provided segment size — Retry: Yes"). Only a size the manifest declared and the origin contradicts is a
    /// warning (returned), and the file completes.
    func complete(_ resource: DownloadResource, index: Int, size: Int64, announced: Int64?, budget: DownloadBudget? = nil,
                  progress: LiveProgress) throws(DownloadFailure) -> String? {
        if let announced, announced != size {
            let url = resource.url
            guard size < announced else {
                var have = size
                if let budget { try restart(have: &have, budget: budget, progress: progress) }
                throw .invalidContent(url: url, reason: "\(size) bytes received where the origin announced \(announced)")
            }
            throw .network(url: url, message: "the response ended after \(size) of the \(announced) bytes the origin announced")
        }
        try folder.rename(name, to: final)
        progress.markComplete(index)
        if let declared = resource.expectedSize, Int64(declared) != size {
            return "\(DownloadFailure.redacted(resource.url)): \(size) bytes on disk, \(declared) declared by the manifest; kept"
        }
        return nil
    }

    /// A Content-Range header's start and total: `bytes a-b/total` (or `bytes */total`).
    static func contentRange(_ header: String?) -> (start: Int64?, total: Int64?)? {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return nil }
        let value = header.dropFirst(6)
        let parts = value.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let start = parts[0] == "*" ? nil : parts[0].split(separator: "-").first.flatMap { Int64($0) }
        return (start, Int64(parts[1]))
    }
}
