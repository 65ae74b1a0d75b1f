import Foundation
import SatchelMedia

/// Pass-through mode's license forwarding: the key URIs of a session's playlists (`EXT-X-KEY`,
/// `EXT-X-SESSION-KEY`; http and https only — an `skd://` URI is the player's FairPlay session's business)
/// point at the proxy, which forwards each request to the original URI with the agent's license request
/// extras (custom headers, custom data, the token). Only key URIs on a license host the user named (the license
/// server's, or an allow-list) are forwarded: the playlists come from the content's origin, and a key URI on a
/// host the content chose must never receive the user's credentials — it is left as written. Pure: the table of
/// targets and the rewriting.
public struct KeyForwarding: Sendable, Equatable {
    /// The path, in a session, under which forwarded keys live (`.satchel` is never a downloaded file's path).
    public static let prefix = ".satchel/keys/"
    /// At most this many distinct key URIs are forwarded (key rotation over a long asset stays far below).
    public static let maximumTargets = 10_000
    /// A key or license answer is at most this many bytes (a CKC, a Clear Key JSON, 16 bytes of AES key).
    public static let maximumAnswer: Int64 = 1 << 20

    /// The original key URIs, in the order first seen.
    public let targets: [String]
    /// The hosts credentials may go to: `host` or `host:port`, lowercased.
    public let hosts: Set<String>

    /// The key URIs of `playlists` that are forwarded: those on one of `hosts` (`host`, or `host:port` for that
    /// port alone).
    public init(playlists: [String], hosts: Set<String>) throws(StreamError) {
        let hosts = Set(hosts.map { $0.lowercased() })
        var targets: [String] = []
        var seen = Set<String>()
        for text in playlists {
            _ = HLSRewriter.rewrite(text) { (reference: HLSURIReference) -> HLSURIDecision in
                if Self.isForwarded(reference, hosts: hosts), seen.insert(reference.uri).inserted { targets.append(reference.uri) }
                return .keep
            }
        }
        guard targets.count <= Self.maximumTargets else { throw .invalidContent("more than \(Self.maximumTargets) key URIs") }
        self.targets = targets
        self.hosts = hosts
    }

    /// `text` with every forwarded key URI replaced by the proxy's path for it in the session `token`.
    public func rewrite(_ text: String, token: String) -> String {
        HLSRewriter.rewrite(text) { (reference: HLSURIReference) -> HLSURIDecision in
            guard Self.isForwarded(reference, hosts: hosts), let index = targets.firstIndex(of: reference.uri) else { return .keep }
            return .replace("/\(token)/\(Self.prefix)\(index)")
        }
    }

    /// The original URI a session path (`.satchel/keys/N`) stands for.
    public func target(_ path: String) -> String? {
        guard path.hasPrefix(Self.prefix), let index = Int(path.dropFirst(Self.prefix.count)), targets.indices.contains(index) else { return nil }
        return targets[index]
    }

    private static func isForwarded(_ reference: HLSURIReference, hosts: Set<String>) -> Bool {
        guard reference.site == .tag("EXT-X-KEY") || reference.site == .tag("EXT-X-SESSION-KEY"),
              let url = URL(string: reference.uri), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host?.lowercased(), url.user == nil, url.password == nil else { return false }
        return hosts.contains(host) || url.port.map { hosts.contains("\(host):\($0)") } ?? false
    }

    /// The host (`host` or `host:port`) of a server URL, for ``init(playlists:hosts:)``; nil when it has none.
    public static func host(of server: String) -> String? {
        guard let url = URL(string: server), let host = url.host?.lowercased() else { return nil }
        return url.port.map { "\(host):\($0)" } ?? host
    }
}
