/// MIME type matching for permitted-type lists.
public enum MIMEType {
    /// What a single-file download may be by default: audio, video and generic binary types.
    public static let defaultPermitted = ["video/*", "audio/*", "application/mp4", "application/octet-stream", "binary/octet-stream",
                                          "application/vnd.apple.mpegurl", "application/dash+xml"]

    /// The bare type of a Content-Type header value, lower-cased, without parameters.
    public static func essence(_ contentType: String) -> String {
        String(contentType.split(separator: ";", maxSplits: 1).first ?? "").trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// True when `contentType` is permitted by `list`: an explicit empty list permits everything (no check).
    public static func permits(_ list: [String], _ contentType: String) -> Bool {
        list.isEmpty || matches(contentType, list)
    }

    /// The list of `--permitted-mime-types`: comma-separated types (`type/*` wildcards allowed); an empty
    /// text is the empty list, which turns the check off. A malformed entry is refused.
    package static func parseList(_ text: String) throws(StreamError) -> [String] {
        let entries = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        for entry in entries where entry.split(separator: "/", omittingEmptySubsequences: false).count != 2 || entry.contains(" ") {
            throw .invalidArgument("\"\(entry.prefix(60))\" is not a MIME type (type/subtype, type/* or */*)")
        }
        return entries
    }

    /// True when `contentType` matches one of `patterns` (`type/*` wildcards allowed).
    public static func matches(_ contentType: String, _ patterns: [String]) -> Bool {
        let type = essence(contentType)
        return patterns.contains { pattern in
            let pattern = pattern.lowercased()
            if pattern == "*/*" || pattern == type { return true }
            if pattern.hasSuffix("/*") { return type.hasPrefix(pattern.dropLast()) }
            return false
        }
    }

    /// True for types that are markup pages rather than media (a captive portal, an error page).
    public static func isWebPage(_ contentType: String) -> Bool {
        ["text/html", "application/xhtml+xml"].contains(essence(contentType))
    }

    /// True when `bytes`, the start of a body, are an HTML page whatever its type says: what a Wi-Fi hotspot's
    /// sign-in page sends in place of every file asked for.
    public static func looksLikeWebPage<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        let text = String(decoding: bytes.prefix(64), as: UTF8.self).drop { $0.isWhitespace || $0 == "\u{FEFF}" }.lowercased()
        return text.hasPrefix("<!doctype html") || text.hasPrefix("<html")
    }
}
