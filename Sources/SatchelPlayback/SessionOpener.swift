import Foundation
import SatchelProtection
import SatchelRights
import SatchelStreams

/// Opens a session over an asset of a library: its routes (the HLS playlists mapped, or a DASH / Smooth source
/// transcribed), whether it is protected (the key tags, and the init segments' own sample entries), its keys and
/// rights, and pass-through's forwarded key URIs.
struct SessionOpener: Sendable {
    let library: any PlaybackLibrary
    let rights: (any PlaybackRights)?
    let context: SourceContext
    /// Opens to learn what the content is, without rights or keys (nothing is served from such a session).
    var inspecting = false

    var configuration: PlaybackProxy.Configuration { context.configuration }

    /// A session for `assetID`: its window must allow playback and, when it is protected, its rights must be
    /// `valid` (the source registers the first use). The rights are those of `licenseAsset`, else of the asset the
    /// library says it was licensed as, else of `assetID`. `audio` (a track's name or language) picks a DASH or Smooth
    /// source's audio for its transcript.
    func open(_ assetID: String, licenseAsset: String?, audio: String? = nil) async throws(PlaybackError) -> PlaybackSession {
        var asset = try await library.openForPlayback(assetID)
        if let licenseAsset { asset.licenseAsset = licenseAsset }
        let rightsAsset = asset.licenseAsset ?? assetID
        if asset.isSingleFile { return try await openSingleFile(assetID, asset, rightsAsset: rightsAsset) }
        let entryText = try SessionFiles.playlist(asset.entry, of: asset)
        var map = HLSAssetMap(playlists: [asset.entry], segments: [:])
        var transcript: HLSTranscript?
        var languages = configuration.languages
        let keepsManifest = HLSTranscript.isMPD(entryText) || HLSTranscript.isSmooth(entryText)
        let audioTracks = keepsManifest ? ContentInfo.audioTracks(manifest: entryText) : ContentInfo.audioTracks(master: entryText)
        if keepsManifest {
            // A DASH or Smooth source: transcribed to HLS when decrypting, its manifest served as it is in pass-through.
            let chosen = audio.flatMap { AudioSelection.track($0, in: audioTracks) }?.language
            languages = (chosen.map { [$0] } ?? []) + configuration.languages
            do throws(StreamError) {
                let made = try HLSTranscript(manifest: entryText, url: asset.sourceURL ?? HLSTranscript.assetURL(asset.entry),
                                             languages: languages)
                if configuration.mode == .decrypt { transcript = made }
            } catch { throw PlaybackError(error) }
        } else {
            map = try Self.assetMap(asset)
            // Protection is what the init segments say, not only the key tags: a CMAF package without key tags is
            // encrypted all the same, and its segments are made clear (or the session refused), never passed on.
            for initSegment in map.unsignalledInitSegments.sorted() {
                guard let bytes = try? await initSegmentBytes(initSegment, of: asset), let scheme = FMP4Decryptor.scheme(ofInitSegment: bytes) else { continue }
                map.markProtected(initSegment: initSegment, scheme: scheme)
            }
        }
        let isProtected = map.isProtected || (keepsManifest && HLSTranscript.declaresProtection(entryText))
        let (keys, sessionRights) = try await opening(isProtected, rightsAsset)
        var forwarding: KeyForwarding?
        if configuration.mode == .passthrough, configuration.forwarding != nil, !keepsManifest {
            var texts: [String] = []
            for path in map.playlists.sorted() { texts.append(try SessionFiles.playlist(path, of: asset)) }
            do throws(StreamError) { forwarding = try KeyForwarding(playlists: texts, hosts: Set(configuration.licenseHosts)) } catch {
                throw PlaybackError(error)
            }
        }
        let router = StreamRouter(map: map, transcript: transcript, forwarding: forwarding, decrypting: configuration.mode == .decrypt,
                                  keepsManifest: keepsManifest)
        let content = ContentInfo(protected: isProtected, drm: keepsManifest ? (isProtected ? ["cenc"] : []) : ContentInfo.schemes(of: map),
                                  audioTracks: audioTracks)
        let session = PlaybackSession(assetID: assetID, asset: asset, mode: configuration.mode, keys: keys, rights: sessionRights,
                                      keepsManifest: keepsManifest, router: router, content: content, languages: languages)
        if let transcript {
            // SegmentBase representations: their indexes are read now, through the session (disk, else origin).
            let files = SessionFiles(session: session, context: context)
            session.replace(transcript: try await TranscriptAssembly(files: files).indexed(transcript, mpd: entryText, url: asset.sourceURL ?? HLSTranscript.assetURL(asset.entry)))
        }
        return session
    }

    /// The keys (when decrypting) and the rights of protected content: it opens only with rights valid now, in
    /// either mode. Clear content has neither.
    private func opening(_ isProtected: Bool, _ rightsAsset: String) async throws(PlaybackError) -> ([PlaybackKey], SessionRights?) {
        guard isProtected, !inspecting else { return ([], nil) }
        guard let rights else { throw .notPlayable(.noRights) }
        let opened = try await rights.playbackKeys(asset: rightsAsset)
        let held = try await SessionRights.taking(rightsAsset, from: rights, holdOff: configuration.holdOff)
        return (configuration.mode == .decrypt ? opened : [], held)
    }

    /// A session over a single media file: served as stored when it is clear with one video track (or in
    /// pass-through), else made clear as it is sent (a protected fragmented MP4 or PIFF `.ismv`: decrypted; several
    /// video tracks: the highest rate only).
    private func openSingleFile(_ assetID: String, _ asset: PlayableAsset, rightsAsset: String) async throws(PlaybackError) -> PlaybackSession {
        let path = asset.entry
        let size: Int64
        if let local = try asset.openLocal(path) { size = local.size } else {
            guard let expected = asset.origin[path]?.expectedSize else { throw .invalidContent("\(path): the origin gives no length to serve ranges of") }
            size = expected
        }
        let read = try SessionFiles.reader(path, of: asset, origin: context.origin)
        if size >= Int64(ProtectedFileHeader.magic.count), try await read(0, ProtectedFileHeader.magic.count) == ProtectedFileHeader.magic {
            return try await openProtectedFile(assetID, asset, rightsAsset: rightsAsset, size: size, read: read)
        }
        let head: MP4FileHead?
        do {
            head = try await MP4FileHead.read(size: size) { (offset, count) async throws(ProtectionError) -> [UInt8] in
                do throws(PlaybackError) { return try await read(offset, count) } catch { throw .malformed(error.description) }
            }
        } catch { throw .invalidContent("\(path): \(error)") }
        var single: SingleFile?
        var isProtected = false
        // Every encrypted track, wherever the file keeps its `moov`: what the proxy cannot make clear is refused by name.
        let encrypted: [String]
        do {
            encrypted = try await MP4ProtectionScan.protectedEntries(size: size) { (offset, count) async throws(ProtectionError) -> [UInt8] in
                do throws(PlaybackError) { return try await read(offset, count) } catch { throw .malformed(error.description) }
            }
        } catch { throw .invalidContent("\(path): \(error)") }
        if configuration.mode == .decrypt, !encrypted.isEmpty, head?.isFragmented != true {
            throw .unsupportedProtection("\(path) has encrypted tracks (\(encrypted.joined(separator: ", "))) whose media is not in fragments, so it cannot be made clear as it streams: make it fragmented (ffmpeg -i FILE -c copy -movflags frag_keyframe+empty_moov OUT.mp4, or satchel package) and download that, or play it with --passthrough in a player with DRM")
        }
        isProtected = !encrypted.isEmpty
        if let head {
            let tracks: [UInt32: FMP4Decryptor]
            do { tracks = try FMP4FileDecryptor.tracks(ofHead: head.bytes) } catch { throw .invalidContent("\(path): \(error)") }
            isProtected = isProtected || !tracks.isEmpty
            if configuration.mode == .decrypt, tracks.count < encrypted.count {
                throw .unsupportedProtection("\(path) has encrypted tracks (\(encrypted.joined(separator: ", "))) the proxy cannot decrypt: only cenc and cbcs with a track encryption box are made clear")
            }
            let dropping = head.isFragmented ? head.lesserVideoTracks : []
            if configuration.mode == .decrypt, isProtected || !dropping.isEmpty {
                single = SingleFile(head: head, tracks: tracks, dropping: dropping, size: size)
            }
        }
        let (keys, sessionRights) = try await opening(isProtected, rightsAsset)
        let router = StreamRouter(map: HLSAssetMap(playlists: [], segments: [:]), transcript: nil, forwarding: nil,
                                  decrypting: configuration.mode == .decrypt, keepsManifest: false, singleFile: single == nil ? nil : path)
        return PlaybackSession(assetID: assetID, asset: asset, mode: configuration.mode, keys: keys, rights: sessionRights, keepsManifest: false,
                               router: router, singleFile: single, content: ContentInfo(protected: isProtected, drm: isProtected ? ["cenc"] : []))
    }

    /// A session over a Satchel protected file: its header read, its key taken from the rights (which must be valid
    /// now), its plain bytes served by random access (only the chunks a range touches are read, from disk or the
    /// origin). In pass-through, the file is served as stored.
    private func openProtectedFile(_ assetID: String, _ asset: PlayableAsset, rightsAsset: String, size: Int64,
                                   read: @escaping @Sendable (Int64, Int) async throws(PlaybackError) -> [UInt8]) async throws(PlaybackError) -> PlaybackSession {
        let source = SessionByteSource(size: UInt64(size), read: read)
        let path = asset.entry
        let header: ProtectedFileHeader
        do { header = try ProtectedFileHeader.parse(try await read(0, Int(min(size, Int64(ProtectedFileHeader.maximumLength))))) } catch let error as PlaybackError {
            throw error
        } catch { throw .invalidContent("\(path): \(error)") }
        let (keys, sessionRights) = try await opening(true, rightsAsset)
        var reader: ProtectedFileReader?
        if configuration.mode == .decrypt, !inspecting {
            guard let key = keys.first(where: { $0.keyID == header.keyID.hex }) else {
                throw .invalidContent("\(path): the license holds no key \(header.keyID.hex), which the file needs")
            }
            do { reader = try await ProtectedFileReader.open(source, key: key.key) } catch let error as PlaybackError {
                throw error
            } catch { throw .invalidContent("\(path): \(error)") }
        }
        let router = StreamRouter(map: HLSAssetMap(playlists: [], segments: [:]), transcript: nil, forwarding: nil,
                                  decrypting: configuration.mode == .decrypt, keepsManifest: false, singleFile: reader == nil ? nil : path)
        return PlaybackSession(assetID: assetID, asset: asset, mode: configuration.mode, keys: keys, rights: sessionRights, keepsManifest: false,
                               router: router, protectedFile: reader, content: ContentInfo(protected: true, drm: ["satchel-file"]))
    }

    /// The asset map of an HLS asset: its playlists read from memory or disk (a playlist that cannot be read is the
    /// proxy's error for it, a playlist that cannot be followed invalid content).
    static func assetMap(_ asset: PlayableAsset) throws(PlaybackError) -> HLSAssetMap {
        var failure: PlaybackError?
        do throws(StreamError) {
            return try HLSAssetMap.build(entry: asset.entry) { (path: String) throws(StreamError) -> String in
                do throws(PlaybackError) { return try SessionFiles.playlist(path, of: asset) } catch {
                    failure = error
                    throw .invalidContent(error.description)
                }
            }
        } catch { throw failure ?? PlaybackError(error) }
    }

    /// An init segment of `asset` read before its session exists: from disk, else from the origin (at most 1 MiB).
    private func initSegmentBytes(_ path: String, of asset: PlayableAsset) async throws(PlaybackError) -> [UInt8] {
        if let local = try asset.openLocal(path) {
            guard local.size <= 1 << 20 else { throw .invalidContent("\(path) is larger than an init segment") }
            return try SessionFiles.read(local)
        }
        guard let remote = asset.origin[path] else { throw .notFound }
        return try await context.origin.fetch(remote, headers: asset.originHeaders, limit: 1 << 20)
    }
}
