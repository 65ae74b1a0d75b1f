/// MIME type matching for permitted-type lists.
public enum MIMEType {
    /// What a single-file download may be by default: audio, video and generic binary types.
    public static let defaultPermitted = ["video/*", "audio/*", "application/mp4", "application/octet-stream", "binary/octet-stream",
                                          "application/vnd.apple.mpegurl", "application/dash+xml"]

    /// The bare type of a Content-Type header value, lower-cased, without parameters.
    public static func essence(_ contentType: String) -> String {
        String(contentType.split(separator: ";", maxSplits: 1).first ?? "").trimmingCharacters(in: .whitespaces).lowercased()
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
}
