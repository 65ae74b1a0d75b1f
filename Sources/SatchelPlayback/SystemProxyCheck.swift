/// Whether a system HTTP proxy would capture the playback proxy's loopback URLs (a
/// player that honours `http_proxy` sends `http://127.0.0.1:…` to that proxy, which cannot reach this device).
public enum SystemProxyCheck {
    /// The warning for `environment` (nil: no proxy, or `no_proxy` covers 127.0.0.1). Names the variable, never its
    /// value (it may hold credentials).
    public static func warning(environment: [String: String]) -> String? {
        guard let variable = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"].first(where: { !(environment[$0] ?? "").isEmpty }) else { return nil }
        let exceptions = (environment["no_proxy"] ?? environment["NO_PROXY"] ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        if exceptions.contains(where: covers) { return nil }
        return "\(variable) is set and no_proxy does not cover 127.0.0.1: a player that honours it sends the session URL to that proxy, "
            + "which cannot reach this device's loopback. Fix: export no_proxy=127.0.0.1,localhost (and NO_PROXY)"
    }

    /// Whether one `no_proxy` entry covers 127.0.0.1.
    static func covers(_ entry: String) -> Bool {
        let host = entry.split(separator: ":").first.map(String.init) ?? entry
        return ["*", "127.0.0.1", "127.0.0.0/8"].contains(host)
    }
}
