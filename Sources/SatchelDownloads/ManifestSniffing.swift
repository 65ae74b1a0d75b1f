import SatchelStreams

/// Whether a probed source is a manifest (text) or media, from its type and first bytes.
enum ManifestSniffing {
    /// A type that names text: `text/*`, XML, an HLS playlist, JSON.
    static func isTextType(_ contentType: String) -> Bool {
        let type = MIMEType.essence(contentType)
        return type.hasPrefix("text/") || type.hasSuffix("xml") || type.contains("mpegurl") || type.hasSuffix("json")
    }

    /// Bytes that start (after a byte-order mark and blanks) as an HLS playlist (`#EXTM3U`) or as XML (`<`, then text:
    /// no control character but tab, line feed and carriage return). Media that happens to begin with `#` or `<` (one
    /// file in a hundred of random bytes) is media.
    static func looksLikeText(_ bytes: [UInt8]) -> Bool {
        let start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        guard let first = bytes[start...].firstIndex(where: { !blanks.contains($0) }) else { return false }
        let rest = bytes[first...]
        if rest.first == UInt8(ascii: "#") {
            let tag = Array("#EXTM3U".utf8)
            return rest.count >= tag.count ? rest.starts(with: tag) : tag.starts(with: rest)
        }
        return rest.first == UInt8(ascii: "<") && !rest.contains(where: { ($0 < 0x20 && !blanks.contains($0)) || $0 == 0x7F })
    }

    /// Space, tab, line feed, carriage return.
    private static let blanks: Set<UInt8> = [0x20, 0x09, 0x0A, 0x0D]
}
