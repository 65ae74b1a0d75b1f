import Foundation
import SatchelBytes

/// A readable asset ID for a download added without one: the name a person would give it from its URL — the
/// playlist's or file's own name, or its folder's when the file has a generic name (`…/movie/master.m3u8` →
/// `movie`, `…/show.ism/Manifest` → `show`, `…/trailer.mp4` → `trailer`) — made a safe folder name and unique
/// (`movie-2` when `movie` is taken). Pure.
package enum DownloadNaming {
    /// File names that say nothing of the asset: the folder names it instead.
    static let generic: Set<String> = ["master", "index", "manifest", "playlist", "main", "stream", "prog_index", "out", "media", "video", "dash",
                                       "hls", "mpd", "default", "content"]
    /// The longest ID made.
    static let maximumLength = 64

    /// The ID for `url` that `taken` does not hold.
    package static func id(for url: URL, taken: (String) -> Bool) -> String {
        let base = base(of: url)
        guard taken(base) else { return base }
        for number in 2...10_000 where !taken("\(base)-\(number)") { return "\(base)-\(number)" }
        return "\(base)-\(SecureRandom.uuid().uuidString.prefix(8).lowercased())"
    }

    /// The readable part: the file's name without its extension, or its folder's.
    static func base(of url: URL) -> String {
        let names = url.pathComponents.filter { $0 != "/" && !$0.isEmpty }.map { ($0 as NSString).deletingPathExtension }
        var chosen = ""
        for name in names.reversed() {
            chosen = sanitize(name)
            if !chosen.isEmpty, !generic.contains(chosen.lowercased()) { break }
        }
        if chosen.isEmpty || generic.contains(chosen.lowercased()) { chosen = sanitize(url.host ?? "") }
        return chosen.isEmpty ? "asset" : chosen
    }

    /// `name` as a folder name: letters, digits, `.`, `_` and `-` (anything else a dash, runs of them one), no
    /// leading or trailing dot or dash, at most ``maximumLength`` characters.
    static func sanitize(_ name: String) -> String {
        var out = ""
        for scalar in name.unicodeScalars {
            let allowed = scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || "._-".unicodeScalars.contains(scalar))
            if allowed { out.unicodeScalars.append(scalar) } else if !out.hasSuffix("-") { out += "-" }
        }
        let trimmed = out.trimmingCharacters(in: CharacterSet(charactersIn: ".-"))
        return String(trimmed.prefix(maximumLength)).trimmingCharacters(in: CharacterSet(charactersIn: ".-"))
    }
}
