/// Bitrate choice shared by the planners: the highest not above `max` (the lowest when none is);
/// 0 = the lowest; nil = the highest.
enum RenditionChoice {
    static func pick<T>(_ items: [T], bitrate: (T) -> Int, max: Int?) -> T? {
        let sorted = items.sorted { bitrate($0) < bitrate($1) }
        switch max {
        case nil: return sorted.last
        case 0?: return sorted.first
        case let max?: return sorted.last { bitrate($0) <= max } ?? sorted.first
        }
    }

    /// True when `language` matches one of the wanted language prefixes (`*`: every language).
    static func wanted(_ language: String?, _ languages: [String]) -> Bool {
        guard let language = language?.lowercased() else { return false }
        return languages.contains { $0 == "*" || language.hasPrefix($0.lowercased()) }
    }
}
