import Foundation

/// Maps origin URLs to paths inside an asset's directory: a URL under the manifest's directory keeps
/// its relative path; any other URL goes under `external/<host>/…`. The URL's path is percent-decoded
/// exactly once, then normalised (`.` dropped, `..` taking back a component); a path that would leave
/// the asset's directory is refused. A query string becomes part of the name so distinct URLs stay distinct.
public enum LocalPath {
    /// Longest local path accepted, in bytes (file systems allow 4096; a manifest has no use for more).
    public static let maxLength = 1024

    /// The local path for `url`, relative to the directory of `root` (the manifest URL). Throws
    /// `invalidContent` when the decoded path would leave the asset's directory.
    public static func map(_ url: URL, root: URL) throws(DownloadFailure) -> String {
        let url = url.standardized, root = root.standardized  // resolve literal "." and ".." before comparing
        let base = root.deletingLastPathComponent().absoluteString
        let absolute = url.absoluteString
        var relative: String
        if absolute.hasPrefix(base), url.host == root.host, url.port == root.port {
            relative = String(absolute.dropFirst(base.count))
            if let end = relative.firstIndex(where: { $0 == "?" || $0 == "#" }) { relative = String(relative[..<end]) }
        } else {
            // The percent-encoded path: `url.path` would decode it once already (and `%252e` would become "." here).
            let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? ""
            relative = "external/\(encode(url.host ?? "local"))\(url.port.map { "_\($0)" } ?? "")/\(path)"
        }
        var components: [String] = []
        for raw in relative.split(separator: "/", omittingEmptySubsequences: true) {
            let decoded = sanitize(raw.removingPercentEncoding ?? String(raw))
            switch decoded {
            case "", ".": continue
            case "..":
                guard components.popLast() != nil else { throw escape(url) }
            default: components.append(decoded)
            }
        }
        if components.isEmpty { components = ["index"] }
        if let query = url.query, !query.isEmpty, let last = components.popLast() {
            components.append(last + "_" + String(UInt32(truncatingIfNeeded: query.hashValueStable), radix: 16))
        }
        let path = components.joined(separator: "/")
        guard isConfined(path) else { throw escape(url) }
        return path
    }

    /// True when `path` is a relative path that stays inside the directory it is taken from: not empty,
    /// not absolute, no empty, `.` or `..` component, no NUL, at most ``maxLength`` bytes, no component
    /// over 255 bytes. Every path the store opens is checked with this first.
    public static func isConfined(_ path: String) -> Bool {
        guard !path.isEmpty, path.utf8.count <= maxLength, !path.hasPrefix("/"), !path.utf8.contains(0) else { return false }
        return path.split(separator: "/", omittingEmptySubsequences: false).allSatisfy { component in
            !component.isEmpty && component != "." && component != ".." && component.utf8.count <= 255
        }
    }

    /// ``map(_:root:)`` for planners: an unsafe path refuses the asset (``DownloadError/unsafeResource(_:)``).
    static func planned(_ url: URL, root: URL) throws(DownloadError) -> String {
        do { return try map(url, root: root) } catch { throw .unsafeResource(error) }
    }

    private static func escape(_ url: URL) -> DownloadFailure {
        .invalidContent(url: url.absoluteString, reason: "its local path would leave the asset's folder")
    }

    private static func encode(_ host: String) -> String {
        host.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? host
    }

    /// The file holding bytes `offset..<offset+length` of `path`: the range goes before the extension
    /// (`all.m4s` → `all.1000-500.m4s`), so players that check segment extensions accept it.
    public static func piece(_ path: String, offset: Int, length: Int) -> String {
        let slash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        guard let dot = path[slash...].lastIndex(of: "."), dot > slash else { return path + ".\(offset)-\(length)" }
        return "\(path[..<dot]).\(offset)-\(length)\(path[dot...])"
    }

    /// The path of `target` as seen from the file at `from` (both local paths), for rewritten manifests.
    public static func relative(_ target: String, from: String) -> String {
        let fromDirectory = from.split(separator: "/").dropLast().map(String.init)
        let targetParts = target.split(separator: "/").map(String.init)
        var common = 0
        while common < fromDirectory.count, common < targetParts.count - 1, fromDirectory[common] == targetParts[common] { common += 1 }
        let ups = Array(repeating: "..", count: fromDirectory.count - common)
        return (ups + targetParts[common...]).joined(separator: "/")
    }

    /// A decoded component made safe as one file name: separators, NUL and ':' become '_'.
    private static func sanitize(_ component: String) -> String {
        String(component.map { "/\\\0:".contains($0) ? "_" : $0 })
    }
}

extension String {
    /// FNV-1a, stable across runs (Swift's hashValue is seeded per process).
    var hashValueStable: UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }
}
