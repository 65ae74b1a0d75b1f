import Foundation

/// Maps origin URLs to paths inside an asset's directory: a URL under the manifest's directory keeps
/// its relative path; any other URL goes under `external/<host>/…`. The URL's path is percent-decoded
/// exactly once, then normalised (`.` dropped, `..` taking back a component); a path that would leave
/// the asset's directory is refused. A query string becomes part of the name so distinct URLs stay distinct.
public enum LocalPath {
    /// The folder of an asset that holds the engine's own files (its plan): no file of a manifest is stored there,
    /// and no server serves it.
    public static let metadataFolder = ".satchel"
    /// Longest local path accepted, in bytes (file systems allow 4096; a manifest has no use for more).
    public static let maxLength = 1024

    /// The local path for `url`, relative to the directory of `root` (the manifest URL). Throws
    /// `invalidContent` when the decoded path would leave the asset's directory.
    public static func map(_ url: URL, root: URL) throws(StreamError) -> String {
        try Mapper(root: root).map(url)
    }

    /// ``LocalPath/map(_:root:)`` for many URLs under one root: what depends on the root is worked out once.
    package struct Mapper: Sendable {
        /// The manifest's directory, as an absolute URL string ending in "/".
        let base: String

        /// A mapper for URLs of the manifest at `root`.
        package init(root: URL) {
            base = root.standardized.deletingLastPathComponent().absoluteString
        }

        /// The local path for `url` (see ``LocalPath/map(_:root:)``). Works on UTF-8 bytes: it runs once per file.
        package func map(_ url: URL) throws(StreamError) -> String {
            var url = url
            var absolute = url.absoluteString
            if LocalPath.hasDotSegments(absolute) {  // resolve literal "." and ".." before comparing
                url = url.standardized
                absolute = url.absoluteString
            }
            var bytes = Array(absolute.utf8)[...]
            if let mark = bytes.firstIndex(of: UInt8(ascii: "#")) { bytes = bytes[..<mark] }
            var query: ArraySlice<UInt8> = []
            if let mark = bytes.firstIndex(of: UInt8(ascii: "?")) {
                query = bytes[(mark + 1)...]
                bytes = bytes[..<mark]
            }
            var relative: ArraySlice<UInt8>
            if bytes.starts(with: base.utf8) {  // the base ends in "/" after its host, so scheme, host and port match too
                relative = bytes.dropFirst(base.utf8.count)
            } else {
                // The percent-encoded path: `url.path` would decode it once already (and `%252e` would become "." here).
                let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? ""
                relative = Array("external/\(LocalPath.encode(url.host ?? "local"))\(url.port.map { "_\($0)" } ?? "")/\(path)".utf8)[...]
            }
            var components: [String] = []
            for raw in relative.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
                let text = String(decoding: raw, as: UTF8.self)
                let decoded = raw.contains(UInt8(ascii: "%")) ? (text.removingPercentEncoding ?? text) : text
                switch LocalPath.sanitize(decoded) {
                case "", ".": continue
                case "..":
                    guard components.popLast() != nil else { throw LocalPath.escape(url) }
                case let name: components.append(name)
                }
            }
            if components.isEmpty { components = ["index"] }
            if components.first == LocalPath.metadataFolder { components[0] = "_" + LocalPath.metadataFolder }  // reserved for the plan
            if !query.isEmpty, let last = components.popLast() {
                components.append(last + "_" + String(UInt32(truncatingIfNeeded: String(decoding: query, as: UTF8.self).hashValueStable), radix: 16))
            }
            let path = components.joined(separator: "/")
            guard LocalPath.isConfined(path) else { throw LocalPath.escape(url) }
            return path
        }

        /// ``map(_:)`` for planners (an unsafe path refuses the asset).
        func planned(_ url: URL) throws(StreamError) -> String {
            try map(url)
        }
    }

    /// True when an absolute URL string has a "." or ".." path segment.
    static func hasDotSegments(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        for index in bytes.indices where bytes[index] == UInt8(ascii: "/") {
            var next = index + 1
            guard next < bytes.count, bytes[next] == UInt8(ascii: ".") else { continue }
            next += 1
            if next < bytes.count, bytes[next] == UInt8(ascii: ".") { next += 1 }
            if next == bytes.count || bytes[next] == UInt8(ascii: "/") || bytes[next] == UInt8(ascii: "?") || bytes[next] == UInt8(ascii: "#") { return true }
        }
        return false
    }

    /// True when `path` is a relative path that stays inside the directory it is taken from: not empty,
    /// not absolute, no empty, `.` or `..` component, no NUL, at most ``maxLength`` bytes, no component
    /// over 255 bytes. Every path the store opens is checked with this first.
    public static func isConfined(_ path: String) -> Bool {
        let bytes = path.utf8
        guard !bytes.isEmpty, bytes.count <= maxLength, bytes.first != UInt8(ascii: "/"), !bytes.contains(0) else { return false }
        let dot = UInt8(ascii: ".")
        return bytes.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).allSatisfy { component in
            !component.isEmpty && component.count <= 255 && !component.elementsEqual([dot]) && !component.elementsEqual([dot, dot])
        }
    }

    /// ``map(_:root:)`` for planners (an unsafe path refuses the asset).
    static func planned(_ url: URL, root: URL) throws(StreamError) -> String {
        try Mapper(root: root).planned(url)
    }

    static func escape(_ url: URL) -> StreamError {
        .unsafePath(url: url.absoluteString, reason: "its local path would leave the asset's folder")
    }

    static func encode(_ host: String) -> String {
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
    static func sanitize(_ component: String) -> String {
        guard component.utf8.contains(where: { $0 == 0x2F || $0 == 0x5C || $0 == 0 || $0 == 0x3A }) else { return component }
        return String(component.map { "/\\\0:".contains($0) ? "_" : $0 })
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
