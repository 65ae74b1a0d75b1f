#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SatchelBytes
import SatchelSystem

/// The files an origin publishes under `/content/…`: a folder of packages, read as a CDN would serve it. A path
/// resolves only to a regular, world-readable file inside the folder; hidden names, `.` and `..`, and files that
/// hold keys (`keys.json`, `*.key`, `*.pem`, or any file only its owner may read, as `satchel package` writes its
/// keys) are never served — they answer as if they did not exist. A symbolic link is followed only when both ends
/// pass those rules inside the folder: the name asked for, and the file it leads to (`alias.ts → world.key` and
/// `pub → .git/` are refused, as is any link out of the folder). The file is then opened once, without following
/// any link, and served from that open file.
package struct OriginFiles: Sendable {
    /// The folder, with symbolic links resolved.
    package let root: String

    /// The files under `folder` (it must exist and be a directory).
    package init(folder: String) throws(OriginError) {
        guard let resolved = Self.realPath(folder), Self.isDirectory(resolved) else { throw .noFolder(folder) }
        root = resolved
    }

    /// A file as published: the open file, its size and when it last changed.
    package struct File: Sendable, Equatable {
        /// The path asked for, inside the folder.
        package var path: String
        /// The file, open.
        package var opened: ConfinedFile
        /// Its size in bytes.
        package var size: Int64
        /// Its modification time, seconds and nanoseconds since 1970.
        package var modified: timespec

        /// A strong validator from size and modification time (RFC 9110 §8.8.3).
        package var etag: String { "\"\(String(size, radix: 16))-\(String(modified.tv_sec, radix: 16))-\(String(modified.tv_nsec, radix: 16))\"" }

        /// The modification time as an HTTP date (RFC 9110 §5.6.7).
        package var lastModified: String { HTTPDate.format(Int64(modified.tv_sec)) }

        package static func == (lhs: File, rhs: File) -> Bool {
            lhs.path == rhs.path && lhs.size == rhs.size && lhs.modified.tv_sec == rhs.modified.tv_sec && lhs.modified.tv_nsec == rhs.modified.tv_nsec
        }
    }

    /// The file the decoded path `components` name, or `notFound`.
    package func file(_ components: [String]) throws(OriginError) -> File {
        guard Self.published(components) else { throw .notFound }
        let requested = components.joined(separator: "/")
        // The file a link leads to is held to the same rules as the name asked for, inside the folder.
        guard let resolved = Self.realPath(root + "/" + requested), resolved.hasPrefix(root + "/") else { throw .notFound }
        let relative = String(resolved.dropFirst(root.count + 1))
        guard Self.published(relative.split(separator: "/").map(String.init)) else { throw .notFound }
        // Opened without following a link: one swapped in since the path was resolved is refused.
        guard let opened = try? ConfinedFile.open(relative, below: root), opened.mode & S_IROTH != 0 else { throw .notFound }
        return File(path: requested, opened: opened, size: opened.size, modified: opened.modified)
    }

    /// True when every name passes the rules: not hidden, no separators or NUL, the last one not a key file.
    static func published(_ components: [String]) -> Bool {
        guard !components.isEmpty, components.count <= 64, let name = components.last?.lowercased(), !holdsKeys(name) else { return false }
        return components.allSatisfy { component in
            !component.isEmpty && !component.hasPrefix(".") && component.utf8.count <= 255
                && !component.contains("/") && !component.contains("\\") && !component.contains("\0")
        }
    }

    /// Names that hold keys: never published, whatever their mode.
    static func holdsKeys(_ name: String) -> Bool {
        name == "keys.json" || name.hasSuffix(".keys.json") || name.hasSuffix(".key") || name.hasSuffix(".pem")
    }

    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}

/// How a conditional request is answered (RFC 9110 §13): `If-None-Match` before `If-Modified-Since`, `If-Range`
/// decides whether a range is served.
package enum OriginConditions {
    /// True when the client's copy is current (304 for GET and HEAD).
    package static func notModified(_ file: OriginFiles.File, ifNoneMatch: String?, ifModifiedSince: String?) -> Bool {
        if let ifNoneMatch { return matches(file.etag, ifNoneMatch: ifNoneMatch) }
        guard let ifModifiedSince, let since = HTTPDate.parse(ifModifiedSince) else { return false }
        return Int64(file.modified.tv_sec) <= since
    }

    /// True when `If-None-Match` names `etag` (weak comparison, RFC 9110 §13.1.2) or is `*`.
    package static func matches(_ etag: String, ifNoneMatch: String) -> Bool {
        let tags = ifNoneMatch.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        return tags.contains("*") || tags.contains { $0 == etag || $0 == "W/" + etag }
    }

    /// True when a `Range` may be served: no `If-Range`, or one that names the current validator.
    package static func rangeApplies(_ file: OriginFiles.File, ifRange: String?) -> Bool {
        guard let ifRange = ifRange?.trimmingCharacters(in: .whitespaces) else { return true }
        if ifRange.hasPrefix("\"") { return ifRange == file.etag }
        return HTTPDate.parse(ifRange) == Int64(file.modified.tv_sec)
    }
}

/// IMF-fixdate, the HTTP date format (`Sun, 06 Nov 1994 08:49:37 GMT`).
package enum HTTPDate {
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `seconds` since 1970 as an HTTP date.
    package static func format(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let day = days[Int(((seconds / 86_400) % 7 + 7) % 7)]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(day), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(Int(parts.tm_year) + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }

    /// An IMF-fixdate as seconds since 1970 (other forms: nil, and the condition is ignored as RFC 9110 asks).
    package static func parse(_ text: String) -> Int64? {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[5] == "GMT", let day = Int(fields[1]), let month = months.firstIndex(of: String(fields[2])),
              let year = Int(fields[3]), (1970...9999).contains(year), (1...31).contains(day) else { return nil }
        let clock = fields[4].split(separator: ":").compactMap { Int($0) }
        guard clock.count == 3, (0...23).contains(clock[0]), (0...59).contains(clock[1]), (0...60).contains(clock[2]) else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(clock[0])
        parts.tm_min = Int32(clock[1])
        parts.tm_sec = Int32(clock[2])
        return Int64(timegm(&parts))
    }
}

/// Why the origin did not serve a file.
package enum OriginError: ProblemConvertible, Equatable {
    /// No published file by that path (also what a refused file answers: nothing is revealed).
    case notFound
    /// `--origin` names no folder.
    case noFolder(String)

    package var code: String {
        switch self {
        case .notFound: "not-found"
        case .noFolder: "origin-folder"
        }
    }

    package var httpStatus: Int { self == .notFound ? 404 : 500 }

    package var description: String {
        switch self {
        case .notFound: "no such file"
        case let .noFolder(path): "the origin folder \(path) does not exist or is not a directory"
        }
    }
}
