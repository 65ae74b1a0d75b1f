import SatchelStreams

/// Whether a probed source is a manifest (text) or media, from its type and first bytes.
enum ManifestSniffing {
    /// A type that names text: `text/*`, XML, an HLS playlist, JSON.
    static func isTextType(_ contentType: String) -> Bool {
        let type = MIMEType.essence(contentType)
        return type.hasPrefix("text/") || type.hasSuffix("xml") || type.contains("mpegurl") || type.hasSuffix("json")
    }

    /// Bytes that start (after a byte-order mark and blanks) as a playlist (`#`) or XML (`<`) does.
    static func looksLikeText(_ bytes: [UInt8]) -> Bool {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard let first = bytes[start...].first(where: { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }) else { return false }
        return first == UInt8(ascii: "#") || first == UInt8(ascii: "<")
    }
}
