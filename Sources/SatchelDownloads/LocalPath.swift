import Foundation

/// Maps origin URLs to paths inside an asset's directory: a URL under the manifest's directory keeps
/// its relative path; any other URL goes under `external/<host>/…`. Paths never escape the asset
/// directory, and a query string becomes part of the name so distinct URLs stay distinct.
public enum LocalPath {
    /// The local path for `url`, relative to the directory of `root` (the manifest URL).
    public static func map(_ url: URL, root: URL) -> String {
        let url = url.standardized, root = root.standardized  // resolve "." and ".." before comparing
        let base = root.deletingLastPathComponent().absoluteString
        let absolute = url.absoluteString
        var relative: String
        if absolute.hasPrefix(base), url.host == root.host, url.port == root.port {
            relative = String(absolute.dropFirst(base.count))
            if let query = relative.firstIndex(of: "?") { relative = String(relative[..<query]) }
        } else {
            relative = "external/\(url.host ?? "local")\(url.port.map { "_\($0)" } ?? "")\(url.path)"
        }
        var components = relative.split(separator: "/").map(String.init).filter { !$0.isEmpty && $0 != "." && $0 != ".." }
        if components.isEmpty { components = ["index"] }
        if let query = url.query, !query.isEmpty, var last = components.popLast() {
            last += "_" + String(UInt32(truncatingIfNeeded: query.hashValueStable), radix: 16)
            components.append(last)
        }
        return components.map { $0.removingPercentEncoding ?? $0 }.map(sanitize).joined(separator: "/")
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
