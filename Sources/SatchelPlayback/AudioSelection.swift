import SatchelMedia

/// An audio track chosen when a session opens: found by its name, else by its language, among the
/// session's tracks; the top-level playlist then offers it as the default of its group, every other rendition still
/// listed so the player can switch. Pure.
enum AudioSelection {
    /// The track `wanted` names: a name (case aside), else a language (`fr` also finds `fr-CA`); nil when none does.
    static func track(_ wanted: String, in tracks: [AudioTrack]) -> AudioTrack? {
        let key = wanted.lowercased()
        if let named = tracks.first(where: { $0.name.lowercased() == key }) { return named }
        if let exact = tracks.first(where: { $0.language?.lowercased() == key }) { return exact }
        return tracks.first { $0.language?.lowercased().hasPrefix(key + "-") == true }
    }

    /// A track as an error lists it: its name, and its language when it has one.
    static func label(_ track: AudioTrack) -> String {
        track.language.map { "\(track.name) (\($0))" } ?? track.name
    }

    /// `master` with `selected` the default (and autoselected) audio rendition of every group that has it, every other
    /// audio rendition not the default. Other lines are left as they are.
    static func apply(_ selected: AudioTrack, to master: String) -> String {
        let prefix = "#EXT-X-MEDIA:"
        var lines: [String] = []
        for line in master.split(separator: "\n", omittingEmptySubsequences: false) {
            guard line.hasPrefix(prefix) else {
                lines.append(String(line))
                continue
            }
            var attributes = HLSAttributes(parsing: line.dropFirst(prefix.count))
            guard attributes["TYPE"]?.uppercased() == "AUDIO" else {
                lines.append(String(line))
                continue
            }
            let chosen = attributes["NAME"] == selected.name && attributes["LANGUAGE"] == selected.language
            attributes.set("DEFAULT", chosen ? "YES" : "NO")
            if chosen { attributes.set("AUTOSELECT", "YES") }
            lines.append(prefix + attributes.text)
        }
        return lines.joined(separator: "\n")
    }
}
