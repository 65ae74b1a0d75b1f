/// What the proxy answers for one file: its bytes (or the range asked for), its type and its size.
struct PlaybackResponse: Sendable {
    var bytes: [UInt8]
    var contentType: String
    /// The range served (206), or nil (200).
    var range: ClosedRange<Int64>?
    /// The whole file's size.
    var size: Int64

    /// The bytes of `whole` that `rangeHeader` asks for.
    static func ranged(_ whole: [UInt8], contentType: String, rangeHeader: String?) throws(PlaybackError) -> PlaybackResponse {
        let size = Int64(whole.count)
        guard let range = try ByteRangeRequest.resolve(rangeHeader, size: size) else {
            return PlaybackResponse(bytes: whole, contentType: contentType, range: nil, size: size)
        }
        return PlaybackResponse(bytes: Array(whole[Int(range.lowerBound)...Int(range.upperBound)]), contentType: contentType, range: range, size: size)
    }
}

/// The Content-Type of a file by its extension.
enum ContentTypes {
    static func type(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let ext = name.split(separator: ".").count > 1 ? (name.split(separator: ".").last.map { $0.lowercased() } ?? "") : ""
        switch ext {
        case "m3u8", "m3u": return "application/vnd.apple.mpegurl"
        case "mpd": return "application/dash+xml"
        case "ts": return "video/mp2t"
        case "mp4", "m4s", "m4v", "cmfv": return "video/mp4"
        case "m4a", "cmfa": return "audio/mp4"
        case "aac": return "audio/aac"
        case "vtt", "webvtt": return "text/vtt"
        case "ttml", "xml": return "application/ttml+xml"
        case "ismc": return "application/vnd.ms-sstr+xml"
        default: return "application/octet-stream"
        }
    }
}
