import SatchelMedia

/// Pass-through mode's license forwarding: the key URIs of a session's playlists (`EXT-X-KEY`,
/// `EXT-X-SESSION-KEY`; http and https only — an `skd://` URI is the player's FairPlay session's business)
/// point at the proxy, which forwards each request to the original URI with the agent's license request
/// extras (custom headers, custom data, the token). Pure: the table of targets and the rewriting.
struct KeyForwarding: Sendable, Equatable {
    /// The path, in a session, under which forwarded keys live (`.satchel` is never a downloaded file's path).
    static let prefix = ".satchel/keys/"
    /// At most this many distinct key URIs are forwarded (key rotation over a long asset stays far below).
    static let maximumTargets = 10_000
    /// A key or license answer is at most this many bytes (a CKC, a Clear Key JSON, 16 bytes of AES key).
    static let maximumAnswer: Int64 = 1 << 20

    /// The original key URIs, in the order first seen.
    let targets: [String]

    /// The key URIs of `playlists` that are forwarded.
    init(playlists: [String]) throws(PlaybackError) {
        var targets: [String] = []
        var seen = Set<String>()
        for text in playlists {
            _ = HLSRewriter.rewrite(text) { (reference: HLSURIReference) -> HLSURIDecision in
                if Self.isForwarded(reference), seen.insert(reference.uri).inserted { targets.append(reference.uri) }
                return .keep
            }
        }
        guard targets.count <= Self.maximumTargets else { throw .invalidContent("more than \(Self.maximumTargets) key URIs") }
        self.targets = targets
    }

    /// `text` with every forwarded key URI replaced by the proxy's path for it in the session `token`.
    func rewrite(_ text: String, token: String) -> String {
        HLSRewriter.rewrite(text) { (reference: HLSURIReference) -> HLSURIDecision in
            guard Self.isForwarded(reference), let index = targets.firstIndex(of: reference.uri) else { return .keep }
            return .replace("/\(token)/\(Self.prefix)\(index)")
        }
    }

    /// The original URI a session path (`.satchel/keys/N`) stands for.
    func target(_ path: String) -> String? {
        guard path.hasPrefix(Self.prefix), let index = Int(path.dropFirst(Self.prefix.count)), targets.indices.contains(index) else { return nil }
        return targets[index]
    }

    private static func isForwarded(_ reference: HLSURIReference) -> Bool {
        guard reference.site == .tag("EXT-X-KEY") || reference.site == .tag("EXT-X-SESSION-KEY") else { return false }
        let uri = reference.uri.lowercased()
        return uri.hasPrefix("http://") || uri.hasPrefix("https://")
    }
}
