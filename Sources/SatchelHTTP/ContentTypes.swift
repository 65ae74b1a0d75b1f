/// The Content-Type of a file by its name: the streaming formats (HLS, DASH, Smooth, MPEG-2 TS, fMP4/CMAF,
/// subtitles) and the web files of a page.
public enum ContentTypes {
    /// The type of the file at `path` (its last component decides; unknown: `application/octet-stream`).
    public static func type(of path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        if name.lowercased() == "manifest" { return "application/vnd.ms-sstr+xml" }  // a Smooth Streaming manifest
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
        case "html": return "text/html; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "json": return "application/json"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "svg": return "image/svg+xml"
        case "pdf": return "application/pdf"
        case "epub": return "application/epub+zip"
        case "mp3": return "audio/mpeg"
        case "txt": return "text/plain; charset=utf-8"
        case "zip": return "application/zip"
        default: return "application/octet-stream"
        }
    }
}
