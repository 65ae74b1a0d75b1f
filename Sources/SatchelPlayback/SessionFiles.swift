import Foundation
import SatchelBytes
import SatchelProtection
import SatchelRights
import SatchelStreams
import SatchelSystem

/// The files of one session as the sources read them: from disk (opened once, below the asset's folder, no link
/// followed), else from the origin (kept in the store when the asset is being downloaded), with the session's keys;
/// failures reported as the events the player's app listens for.
struct SessionFiles: Sendable {
    /// Files larger than this are not served (a segment, a playlist).
    static let maximumFile: Int64 = 512 << 20

    let session: PlaybackSession
    let context: SourceContext

    var asset: PlayableAsset { session.asset }

    /// `file` opened from disk, or nil when it is not there.
    func local(_ file: String) throws(PlaybackError) -> ConfinedFile? {
        try asset.openLocal(file)
    }

    /// A file of the session whole: from disk, else from the origin (kept in the store when the asset is being
    /// downloaded), else 503 with `notCached` for a file the playlists list.
    func whole(_ file: String) async throws(PlaybackError) -> [UInt8] {
        if let local = try local(file) { return try Self.read(local) }
        guard let remote = asset.origin[file] else {
            guard session.router.map.listed.contains(file) else { throw .notFound }
            context.events.report(.notCached(asset: session.assetID, path: file))
            throw .notCached(file)
        }
        let bytes = try await reportingOrigin(file) { () async throws(PlaybackError) -> [UInt8] in
            try await context.origin.fetch(remote, headers: asset.originHeaders, limit: Self.maximumFile)
        }
        if remote.expectedSize.map({ $0 == Int64(bytes.count) }) ?? true { await keep(file, bytes) }
        return bytes
    }

    /// Hands a file fetched whole from the origin to the store's owner (an asset being downloaded); a failure is
    /// reported, never dropped.
    func keep(_ file: String, _ bytes: [UInt8]) async {
        guard let fill = asset.fill else { return }
        if let reason = await fill(file, bytes) {
            context.events.report(.notStored(asset: session.assetID, path: file, reason: reason))
        }
    }

    /// A playlist of the asset: held in memory (an online source, a plan) or on disk.
    func playlist(_ path: String) throws(PlaybackError) -> String {
        try Self.playlist(path, of: asset)
    }

    /// A playlist of `asset`: held in memory or on disk.
    static func playlist(_ path: String, of asset: PlayableAsset) throws(PlaybackError) -> String {
        if let text = asset.manifests[path] { return text }
        guard let local = try asset.openLocal(path) else { throw .notFound }
        return String(decoding: try read(local), as: UTF8.self)
    }

    /// Runs an origin request; its failure is reported (`serverError`) before it reaches the player.
    func reportingOrigin<T>(_ file: String, _ work: () async throws(PlaybackError) -> T) async throws(PlaybackError) -> T {
        do {
            return try await work()
        } catch {
            switch error {
            case let .originStatus(status):
                context.events.report(.serverError(asset: session.assetID, path: file, status: status, reason: "the origin answered \(status)",
                                                   url: asset.origin[file].map { PlaybackEvent.withoutQuery($0.url) }))
            case let .originUnreachable(reason):
                context.events.report(.serverError(asset: session.assetID, path: file, status: nil, reason: reason,
                                                   url: asset.origin[file].map { PlaybackEvent.withoutQuery($0.url) }))
            default: break
            }
            throw error
        }
    }

    /// Runs `work`; content that does not parse or decrypt is reported as `invalidContent` (once until a file
    /// plays well: `work` succeeding says this one did, unless it only prepared it, `marksWell` false), a key the
    /// license does not hold as `shouldAbort`.
    func reportingInvalid<T>(_ file: String, marksWell: Bool = true, _ work: () throws(PlaybackError) -> T) throws(PlaybackError) -> T {
        do {
            let result = try work()
            if marksWell { session.markWell() }
            return result
        } catch {
            report(error, file)
            throw error
        }
    }

    /// ``reportingInvalid(_:marksWell:_:)`` for work that waits.
    func reportingInvalid<T>(_ file: String, marksWell: Bool = true, _ work: () async throws(PlaybackError) -> T) async throws(PlaybackError) -> T {
        do {
            let result = try await work()
            if marksWell { session.markWell() }
            return result
        } catch {
            report(error, file)
            throw error
        }
    }

    /// Reports what `error` tells the player's app: invalid content (once until a file plays well), a missing key.
    private func report(_ error: PlaybackError, _ file: String) {
        switch error {
        case let .invalidContent(reason): context.events.invalidContent(session, path: file, reason: reason)
        case let .noKey(reason): context.events.report(.shouldAbort(asset: session.assetID, reason: reason))
        default: break
        }
    }

    /// Reads `count` bytes at `offset` of `file`: from disk when it is there, else with a byte-range request to the
    /// origin.
    func reader(_ file: String) throws(PlaybackError) -> @Sendable (Int64, Int) async throws(PlaybackError) -> [UInt8] {
        try Self.reader(file, of: asset, origin: context.origin)
    }

    /// ``reader(_:)`` for `file` of `asset`, whose files not on disk come from `origin`.
    static func reader(_ file: String, of asset: PlayableAsset,
                       origin: OriginFetcher) throws(PlaybackError) -> @Sendable (Int64, Int) async throws(PlaybackError) -> [UInt8] {
        if let local = try asset.openLocal(file) {
            return { (offset, count) throws(PlaybackError) -> [UInt8] in
                guard count > 0 else { return [] }
                return try Self.read(local, range: offset...(offset + Int64(count) - 1))
            }
        }
        guard let remote = asset.origin[file] else { throw .notFound }
        let headers = asset.originHeaders
        if asset.isSingleFile {
            return { (offset, count) async throws(PlaybackError) -> [UInt8] in
                try await PartialFileRead(asset: asset, file: file, remote: remote, origin: origin).read(offset, count)
            }
        }
        return { (offset, count) async throws(PlaybackError) -> [UInt8] in
            guard count > 0 else { return [] }
            return try await origin.fetch(OriginFile(url: remote.url, range: offset...(offset + Int64(count) - 1)), headers: headers, limit: Self.maximumFile)
        }
    }

    /// The CMAF decryptor of a segment protected with an init segment (its `tenc`, read once per session).
    func fmp4Decryptor(_ protection: SegmentProtection) async throws(PlaybackError) -> FMP4Decryptor? {
        guard let initSegment = protection.map, protection.method != .aes128 else { return nil }
        return try await session.decryptors.value(for: initSegment) { () async throws(PlaybackError) -> FMP4Decryptor in
            let bytes = try await whole(initSegment)
            return try reportingInvalid(initSegment) { () throws(PlaybackError) -> FMP4Decryptor in
                do { return try FMP4Decryptor(initSegment: bytes) } catch { throw .invalidContent("\(initSegment): \(error)") }
            }
        }
    }

    /// The license's key for a CMAF track's key ID; a rights source's only key that names no key ID (a FairPlay key:
    /// its CKC carries none) serves whatever the track names.
    static func key(_ keys: [PlaybackKey], of decryptor: FMP4Decryptor) throws(PlaybackError) -> SecretBytes {
        let unnamed = keys.count == 1 && keys[0].keyID.isEmpty ? keys.first : nil
        guard let key = keys.first(where: { $0.keyID.lowercased() == decryptor.keyID.hex }) ?? unnamed else {
            throw .noKey("the license holds no key for key ID \(decryptor.keyID.hex)")
        }
        return key.key
    }

    /// The key for a segment whose key tag names `keyURI`.
    func key(_ keyURI: String?) throws(PlaybackError) -> PlaybackKey {
        guard let key = session.key(for: keyURI) else { throw .noKey("the license holds no key for this segment") }
        return key
    }

    /// The AES-128 cipher of a segment's key.
    func cipher(_ protection: SegmentProtection) throws(PlaybackError) -> SegmentCipher {
        let key = try key(protection.keyURI)
        do { return try SegmentCipher(key: key.key) } catch { throw .invalidContent("the license's key does not fit AES-128 (\(error))") }
    }

    /// The key and IV of a SAMPLE-AES MPEG-TS segment: the key tag's IV when it gives one, else the key's own.
    func sampleAESKey(_ protection: SegmentProtection) throws(PlaybackError) -> (SecretBytes, [UInt8]) {
        let key = try key(protection.keyURI)
        return (key.key, protection.ivFromTag ? protection.iv : key.iv ?? protection.iv)
    }

    /// The bytes `range` of a stored file (a range past its end is invalid content).
    static func read(_ file: ConfinedFile, range: ClosedRange<Int64>) throws(PlaybackError) -> [UInt8] {
        guard range.upperBound < file.size else { throw .invalidContent("\(file.name) is shorter than the byte range the manifest gives") }
        do { return try file.read(Int(range.upperBound - range.lowerBound + 1), at: range.lowerBound) } catch {
            throw .storage("\(file.name) shrank or failed while it was read")
        }
    }

    /// A stored file, whole (at most ``maximumFile``).
    static func read(_ file: ConfinedFile) throws(PlaybackError) -> [UInt8] {
        guard file.size <= maximumFile else { throw .invalidContent("\(file.name) is larger than \(maximumFile >> 20) MB") }
        guard file.size > 0 else { return [] }
        return try read(file, range: 0...(file.size - 1))
    }
}
