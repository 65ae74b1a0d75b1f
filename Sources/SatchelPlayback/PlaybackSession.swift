import Foundation
import SatchelRights
import SatchelBytes
import SatchelMedia
import SatchelProtection
import SatchelStreams
import SatchelSystem

/// How the proxy treats protected content.
public enum PlaybackMode: String, Sendable, CaseIterable {
    /// Decrypt for players without DRM: clear segments, no key tags.
    case decrypt
    /// Keep the protection and the key tags (players with DRM).
    case passthrough
}

/// One open session: an asset, its files and keys, behind an unguessable token.
struct PlaybackSession: Sendable {
    /// The token in every URL of the session (32 random bytes, base64url).
    let token: String
    let assetID: String
    let asset: PlayableAsset
    let map: HLSAssetMap
    let mode: PlaybackMode
    /// The content keys (empty for clear content), opened once at the start.
    let keys: [PlaybackKey]
    /// Pass-through mode's forwarded key URIs (nil: key URIs stay as written).
    let forwarding: KeyForwarding?
    /// True when the asset's content is protected (its rights are checked before every file).
    let isProtected: Bool
    /// True for a DASH source (its MPD is served as it is, never rewritten as a playlist).
    let keepsManifest: Bool
    /// A DASH source transcribed to HLS (decrypt mode); replaced when a dynamic MPD is reloaded.
    var transcript: HLSTranscript?
    /// Set once the rights ended mid-play (the event is emitted once).
    var ended = false
    /// Set once invalid content was reported, until a file plays well again.
    var invalidReported = false
    /// The CMAF decryptors of the session's init segments, each parsed once.
    let decryptors = SessionCache<FMP4Decryptor>()
    /// The init segments of a transcribed DASH source, clear, each read once.
    let initSegments = SessionCache<TranscriptInitSegment>()
    /// Where each rendition's transport stream stands between the segments the proxy makes of it.
    let continuity = ContinuityLedger()

    static func makeToken() -> String { Base64URL.encode(SecureRandom.bytes(32)) }

    /// The key for a segment protected with `keyURI`: the license key whose ID the URI names (32 hex digits,
    /// as Satchel's packager writes them), else the only key.
    func key(for keyURI: String?) -> PlaybackKey? {
        let uri = (keyURI ?? "").lowercased().replacingOccurrences(of: "-", with: "")
        if let named = keys.first(where: { uri.contains($0.keyID.lowercased()) }) { return named }
        return keys.count == 1 ? keys.first : nil
    }
}

/// Where each rendition's MPEG-TS stands between the segments the proxy makes (SAMPLE-AES made clear, DASH and
/// Smooth remuxed): a segment that follows the last one made of its rendition carries the continuity counters on;
/// one that does not (a seek) starts them again and says so with the discontinuity indicator. So a player that
/// plays through sees no continuity error, and one that jumps is told.
final class ContinuityLedger: Sendable {
    private let last = Locked<[String: (sequence: Int64, continuity: TSContinuity)]>([:])

    /// Where segment `sequence` of `rendition` starts.
    func start(_ rendition: String, sequence: Int64) -> TSContinuity {
        last.withLock { table in
            guard let previous = table[rendition] else { return TSContinuity() }
            return previous.sequence &+ 1 == sequence ? previous.continuity : TSContinuity(discontinuity: true)
        }
    }

    /// Segment `sequence` of `rendition` was made, its counters ending at `continuity`.
    func end(_ rendition: String, sequence: Int64, _ continuity: TSContinuity) {
        last.withLock { table in
            if table[rendition] == nil, table.count >= 1000 { table.removeAll() }
            table[rendition] = (sequence, TSContinuity(counters: continuity.counters))
        }
    }
}

/// What a session derives from each init segment, made once (at most ``limit`` kept).
final class SessionCache<Value: Sendable>: Sendable {
    private let table = Locked<[String: Value]>([:])
    static var limit: Int { 256 }

    /// The value for the init segment at `path`, made by `make` the first time.
    func value(for path: String, make: () async throws(PlaybackError) -> Value) async throws(PlaybackError) -> Value {
        if let cached = table.withLock({ $0[path] }) { return cached }
        let made = try await make()
        table.withLock { table in
            if table.count >= Self.limit { table.removeAll() }
            table[path] = made
        }
        return made
    }
}
