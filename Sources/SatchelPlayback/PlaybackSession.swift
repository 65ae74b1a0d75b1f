import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection
import SatchelRights
import SatchelStreams
import SatchelSystem

/// One open session: an asset, its routes and keys, behind an unguessable token. Read by every request without an
/// actor hop: what changes (a reloaded transcript, the invalid-content flag) is kept under locks.
final class PlaybackSession: Sendable {
    /// The token in every URL of the session (32 random bytes, base64url).
    let token: String
    let assetID: String
    let asset: PlayableAsset
    let mode: PlaybackMode
    /// The content keys (empty for clear content and in pass-through), opened once at the start.
    let keys: [PlaybackKey]
    /// The rights, evaluated before every media request (nil: clear content).
    let rights: SessionRights?
    /// True for a DASH or Smooth source (its manifest is served as it is, never rewritten as a playlist).
    let keepsManifest: Bool
    /// The routes of the session's paths; its transcript is replaced when a dynamic MPD or live manifest is reloaded.
    private let routing: Locked<StreamRouter>
    /// Set once invalid content was reported, until a file plays well again.
    private let invalidReported = Locked(false)
    /// Set once the session's first media was sent (``registerPlay()``).
    private let played = Locked(false)
    /// The session's first media, once: the rights' first use (a playback window starts) and the library's first play
    /// (a download's expire-after-play). A failure leaves it to the next request.
    func registerPlay() async throws(PlaybackError) {
        guard played.withLock({ value -> Bool in
            defer { value = true }
            return !value
        }) else { return }
        do {
            try await rights?.registerFirstUse()
            try await asset.onFirstPlay?()
        } catch {
            played.withLock { $0 = false }
            throw error
        }
    }

    /// The CMAF decryptors of the session's init segments, each parsed once.
    let decryptors = SessionCache<FMP4Decryptor>()
    /// The init segments of a transcribed DASH source, clear, each read once.
    let initSegments = SessionCache<TranscriptInitSegment>()
    /// Where each rendition's transport stream stands between the segments the proxy makes of it.
    let continuity = ContinuityLedger()
    /// A single media file made clear as it is sent (nil: none).
    let singleFile: SingleFile?
    /// The clear form of that file, planned once.
    let fileStreams = SessionCache<SingleFileStream>()
    /// A Satchel protected file (a document, not media) served as its plain bytes (nil: none).
    let protectedFile: ProtectedFileReader?
    /// What the content is (protected, its schemes, its audio tracks), found as the session opened.
    let content: ContentInfo
    /// The audio languages a DASH or Smooth source's transcript prefers (the track chosen at open first), also when
    /// its manifest is read again.
    let languages: [String]
    /// The audio track chosen at open (nil: the playlist's own default).
    private let selectedAudio = Locked<AudioTrack?>(nil)

    init(assetID: String, asset: PlayableAsset, mode: PlaybackMode, keys: [PlaybackKey], rights: SessionRights?, keepsManifest: Bool,
         router: StreamRouter, singleFile: SingleFile? = nil, protectedFile: ProtectedFileReader? = nil, content: ContentInfo = ContentInfo(protected: false),
         languages: [String] = []) {
        self.content = content
        self.languages = languages
        self.singleFile = singleFile
        self.protectedFile = protectedFile
        token = Base64URL.encode(SecureRandom.bytes(32))
        self.assetID = assetID
        self.asset = asset
        self.mode = mode
        self.keys = keys
        self.rights = rights
        self.keepsManifest = keepsManifest
        routing = Locked(router)
    }

    /// The audio track chosen at open.
    var audio: AudioTrack? {
        get { selectedAudio.current }
        set { selectedAudio.withLock { $0 = newValue } }
    }

    /// The routes as they stand.
    var router: StreamRouter { routing.current }

    /// A reloaded manifest's transcript replaces the session's.
    func replace(transcript: HLSTranscript) {
        routing.withLock { $0.transcript = transcript }
    }

    /// Records that invalid content was reported; true the first time since a file last played well.
    func markInvalid() -> Bool {
        invalidReported.withLock { reported in
            defer { reported = true }
            return !reported
        }
    }

    /// A file played well: the next invalid one is reported again.
    func markWell() {
        invalidReported.withLock { $0 = false }
    }

    /// The key for a segment protected with `keyURI`: the license key whose ID the URI names (32 hex digits,
    /// as Satchel's packager writes them), else the only key.
    func key(for keyURI: String?) -> PlaybackKey? {
        let uri = (keyURI ?? "").lowercased().replacingOccurrences(of: "-", with: "")
        if let named = keys.first(where: { uri.contains($0.keyID.lowercased()) }) { return named }
        return keys.count == 1 ? keys.first : nil
    }
}

/// The open sessions by token: every request finds its session here, without waiting for an actor.
final class SessionTable: Sendable {
    private let table = Locked<[String: PlaybackSession]>([:])

    /// The session of `token`, if it is open.
    subscript(token: String) -> PlaybackSession? { table.withLock { $0[token] } }

    /// The number of open sessions.
    var count: Int { table.withLock { $0.count } }

    /// Adds a session.
    func insert(_ session: PlaybackSession) {
        table.withLock { $0[session.token] = session }
    }

    /// Removes and answers the sessions `matching` picks (every one: all).
    func remove(where matching: (PlaybackSession) -> Bool = { _ in true }) -> [PlaybackSession] {
        table.withLock { table in
            let removed = table.values.filter(matching)
            for session in removed { table[session.token] = nil }
            return removed
        }
    }

    /// Every open session.
    var all: [PlaybackSession] { table.withLock { Array($0.values) } }
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
