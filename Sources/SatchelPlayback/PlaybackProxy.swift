import Foundation
import Hummingbird
import Logging
import NIOCore
import SatchelBytes
import SatchelHTTP
import SatchelProtection
import SatchelStreams
import SatchelRights
import SatchelSystem
import ServiceLifecycle

/// The playback proxy (seed 002's playlist proxy, seed 003's local HTTP server): a loopback server that hands
/// a player session URLs for downloaded assets and serves their playlists and media, decrypted for players
/// without DRM. A session URL carries an unguessable token; a request without a live one gets 404.
public actor PlaybackProxy {
    /// Where it listens and how it serves.
    public struct Configuration: Sendable {
        /// A loopback address: 127.0.0.1 (default), ::1 or localhost.
        public var host: String
        /// The port (0: any free port).
        public var port: Int
        /// Decrypt, or pass the protection through.
        public var mode: PlaybackMode
        /// In pass-through mode: forward the players' key and license requests through the proxy, adding these
        /// extras (custom headers, custom data, the token); nil: key URIs are left as the playlists write them.
        public var forwarding: LicenseRequestExtras?
        /// Audio languages preferred when a DASH source is transcribed to HLS.
        public var languages: [String]
        /// The hosts `forwarding`'s credentials may go to (`host`, or `host:port` for that port alone): the
        /// license server's, and any the user allows. A key URI on another host is left as the playlist wrote it.
        public var licenseHosts: [String]
        /// The slowest an origin may send a file (a trickle is cut and the player told).
        public var originPace: OriginPace

        /// Creates a configuration.
        public init(host: String = "127.0.0.1", port: Int = 0, mode: PlaybackMode = .decrypt, forwarding: LicenseRequestExtras? = nil,
                    languages: [String] = [], licenseHosts: [String] = [], originPace: OriginPace = OriginPace()) {
            self.originPace = originPace
            self.host = host
            self.port = port
            self.mode = mode
            self.forwarding = forwarding
            self.languages = languages
            self.licenseHosts = licenseHosts
        }

        /// The `licenseHosts` entry of a server URL (`host:port`, or `host` when it gives no port); nil when it
        /// names no host.
        public static func licenseHost(of server: String) -> String? {
            KeyForwarding.host(of: server)
        }
    }

    /// Files larger than this are not served (a segment, a playlist).
    static let maximumFile: Int64 = 512 << 20

    let library: any PlaybackLibrary
    let rights: (any PlaybackRights)?
    let configuration: Configuration
    let logger: Logger
    /// Fetches what is not on disk.
    let origin: OriginFetcher
    var sessions: [String: PlaybackSession] = [:]
    private var task: Task<Void, any Error>?
    private var group: ServiceGroup?
    private var boundPort: Int?
    private let continuation: AsyncStream<PlaybackEvent>.Continuation
    /// Events, in order.
    public nonisolated let events: AsyncStream<PlaybackEvent>

    /// A proxy over `library`, with keys and rights from `rights` (the device agent; nil: clear content only).
    public init(library: any PlaybackLibrary, rights: (any PlaybackRights)?, configuration: Configuration = Configuration(),
                logger: Logger = Logger(label: "satchel.playback")) throws(PlaybackError) {
        guard ["127.0.0.1", "::1", "localhost"].contains(configuration.host) else { throw .notLoopback(configuration.host) }
        guard (0...65_535).contains(configuration.port) else { throw .storage("the port must be 0 to 65535") }
        self.library = library
        self.rights = rights
        self.configuration = configuration
        origin = OriginFetcher(slowest: configuration.originPace)
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    /// Starts listening; answers the port.
    public func start() async throws(PlaybackError) -> Int {
        if let boundPort { return boundPort }
        var builder = ApplicationBuilder(host: configuration.host, port: configuration.port, logger: logger)
        builder.redactPath = Self.redact
        builder.loopbackHostsOnly = true
        builder.add(PlaybackRoutes(proxy: self))
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let application = builder.build { channel in portContinuation.yield(channel.localAddress?.port ?? 0) }
        // Stopped by a graceful shutdown of its own service group (requests under way finish, idle connections
        // close); cancelling the server's task instead makes Hummingbird log errors on a normal stop.
        var groupConfiguration = ServiceGroupConfiguration(services: [.init(service: application)], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(5)  // then a player still reading is cut off
        let group = ServiceGroup(configuration: groupConfiguration)
        let task = Task {
            defer { portContinuation.finish() }
            try await group.run()
        }
        self.task = task
        self.group = group
        var port: Int?
        for await bound in ports {
            port = bound
            break
        }
        guard let port, port > 0 else {
            task.cancel()
            throw .storage("cannot listen on \(configuration.host):\(configuration.port) (in use?)")
        }
        boundPort = port
        return port
    }

    /// Stops listening, closes every session (each reports `willAbort` first: its feed is cut) and ends the
    /// event stream.
    public func stop() async {
        for session in sessions.values { continuation.yield(.willAbort(asset: session.assetID, reason: "the playback proxy is stopping")) }
        await group?.triggerGracefulShutdown()
        _ = await task?.result
        task = nil
        group = nil
        await origin.shutdown()
        for session in sessions.values { continuation.yield(.closed(asset: session.assetID)) }
        sessions = [:]
        continuation.finish()
    }

    /// Opens a session for an asset of the library: its window must allow playback and, when it is protected,
    /// its rights must be `valid` (the agent registers the first use). The rights are those of `licenseAsset`, else
    /// of the asset the library says it was licensed as, else of `assetID`. Answers the URL of its entry point.
    public func open(asset assetID: String, licenseAsset: String? = nil) async throws(PlaybackError) -> String {
        let port = try await start()
        var asset = try await library.openForPlayback(assetID)
        if let licenseAsset { asset.licenseAsset = licenseAsset }
        let rightsAsset = asset.licenseAsset ?? assetID
        let entryText = try Self.playlist(asset.entry, of: asset)
        var map = HLSAssetMap(playlists: [asset.entry], segments: [:])
        var transcript: HLSTranscript?
        let keepsManifest = HLSTranscript.isMPD(entryText) || HLSTranscript.isSmooth(entryText)
        if keepsManifest {
            // A DASH or Smooth source: transcribed to HLS when decrypting, its manifest served as it is in pass-through.
            let made: HLSTranscript
            do {
                made = try HLSTranscript(manifest: entryText, url: asset.sourceURL ?? HLSTranscript.assetURL(asset.entry), languages: configuration.languages)
            } catch { throw PlaybackError(error) }
            if configuration.mode == .decrypt { transcript = made }
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
        var keys: [PlaybackKey] = []
        if isProtected {
            // Protected content opens only with rights valid now, in either mode; decrypting takes the keys too.
            guard let rights else { throw .notPlayable(.noRights) }
            let opened = try await rights.playbackKeys(asset: rightsAsset)
            if configuration.mode == .decrypt { keys = opened }
        }
        var forwarding: KeyForwarding?
        if configuration.mode == .passthrough, configuration.forwarding != nil, !keepsManifest {
            var texts: [String] = []
            for path in map.playlists.sorted() { texts.append(try Self.playlist(path, of: asset)) }
            do throws(StreamError) { forwarding = try KeyForwarding(playlists: texts, hosts: Set(configuration.licenseHosts)) } catch { throw PlaybackError(error) }
        }
        var session = PlaybackSession(token: PlaybackSession.makeToken(), assetID: assetID, asset: asset, map: map,
                                      mode: configuration.mode, keys: keys, forwarding: forwarding, isProtected: isProtected, keepsManifest: keepsManifest,
                                      transcript: transcript)
        if let transcript {
            // SegmentBase representations: their indexes are read now, through the session (disk, else origin).
            session.transcript = try await indexed(transcript, mpd: entryText, url: asset.sourceURL ?? HLSTranscript.assetURL(asset.entry), session)
        }
        sessions[session.token] = session
        continuation.yield(.opened(asset: assetID, cache: asset.cache))
        let host = configuration.host == "::1" ? "[::1]" : configuration.host
        return "http://\(host):\(port)/\(session.token)/\(Self.encodedPath(transcript == nil ? asset.entry : HLSTranscript.masterPath))"
    }

    /// The asset map of an HLS asset: its playlists read from memory or disk (a playlist that cannot be read is the
    /// proxy's error for it, a playlist that cannot be followed invalid content).
    static func assetMap(_ asset: PlayableAsset) throws(PlaybackError) -> HLSAssetMap {
        var failure: PlaybackError?
        do throws(StreamError) {
            return try HLSAssetMap.build(entry: asset.entry) { (path: String) throws(StreamError) -> String in
                do throws(PlaybackError) { return try Self.playlist(path, of: asset) } catch {
                    failure = error
                    throw .invalidContent(error.description)
                }
            }
        } catch { throw failure ?? PlaybackError(error) }
    }

    /// A path of the asset as it goes into a session URL: every byte but letters, digits, `-._~` and `/`
    /// percent-encoded, so the URL holds only characters of the proxy's own choosing (a player command line, a
    /// shell, a log line read it as one word) whatever the origin named its files.
    static func encodedPath(_ path: String) -> String {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/")
        return path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
    }

    /// An init segment of `asset` read before its session exists: from disk, else from the origin (at most 1 MiB).
    private func initSegmentBytes(_ path: String, of asset: PlayableAsset) async throws(PlaybackError) -> [UInt8] {
        if let local = try asset.openLocal(path) {
            guard local.size <= 1 << 20 else { throw .invalidContent("\(path) is larger than an init segment") }
            return try Self.read(local)
        }
        guard let remote = asset.origin[path] else { throw .notFound }
        return try await origin.fetch(remote, headers: asset.originHeaders, limit: 1 << 20)
    }

    /// Closes the session whose URL is `url` (its token stops working at once).
    public func close(url: String) {
        for (token, session) in sessions where url.contains("/\(token)/") {
            sessions[token] = nil
            continuation.yield(.closed(asset: session.assetID))
        }
    }

    /// The number of open sessions.
    public var openSessions: Int { sessions.count }

    // MARK: Serving

    func session(_ token: String) -> PlaybackSession? { sessions[token] }

    /// Marks the session's rights as ended; true the first time (the event goes out once).
    func end(_ token: String, status: RightsStatus) -> Bool {
        guard var session = sessions[token], !session.ended else { return false }
        session.ended = true
        sessions[token] = session
        continuation.yield(status == .untrustedTime ? .untrustedTime(asset: session.assetID) : .rightsExpired(asset: session.assetID, status: status))
        return true
    }

    func report(_ event: PlaybackEvent) {
        continuation.yield(event)
    }

    /// Reports invalid content once, then again only after a file of the session has played well (seed 000
    /// §5.4.3's frequency).
    func reportInvalid(_ token: String, path: String, reason: String) {
        guard var session = sessions[token], !session.invalidReported else { return }
        session.invalidReported = true
        sessions[token] = session
        continuation.yield(.invalidContent(asset: session.assetID, path: path, reason: reason))
    }

    /// A file of the session parsed and decrypted: the next invalid one is reported again.
    func parsedWell(_ token: String) {
        sessions[token]?.invalidReported = false
    }

    /// Answers one request of a session.
    nonisolated func respond(token: String, path: String, range: String?) async throws(PlaybackError) -> PlaybackResponse {
        // The engine's own files (the plan: origin URLs, headers) are never served.
        guard let session = await session(token), let file = HLSAssetMap.resolve(path, from: ""),
              !file.hasPrefix(LocalPath.metadataFolder + "/") else { throw .notFound }
        if let transcript = session.transcript, file.hasPrefix(HLSTranscript.folder + "/") {
            return try await transcribed(file, transcript, session, range: range)
        }
        if session.map.playlists.contains(file) {
            let text = try Self.playlist(file, of: session.asset)
            let served = session.keepsManifest ? text : session.mode == .decrypt ? HLSAssetMap.clearPlaylist(text) : session.forwarding?.rewrite(text, token: token) ?? text
            return PlaybackResponse(body: .bytes(Array(served.utf8)), contentType: ContentTypes.type(of: file), range: nil, size: Int64(served.utf8.count))
        }
        if session.isProtected || session.ended {
            try await checkRights(session)
        }
        let contentType = ContentTypes.type(of: file)
        let protection = session.mode == .decrypt ? session.map.segments[file] : nil
        let clearsInit = session.mode == .decrypt && session.map.protectedInitSegments.contains(file)
        if let local = try session.asset.openLocal(file) {
            if protection == nil, !clearsInit {
                return try PlaybackResponse.file(local, contentType: contentType, rangeHeader: range)
            }
            if let protection, protection.method == "AES-128" {
                // Streamed from disk, decrypted block by block.
                return try await reportingInvalid(file, session) { () throws(PlaybackError) -> PlaybackResponse in
                    try PlaybackResponse.decrypting(local, cipher: try Self.cipher(session, protection), iv: protection.iv,
                                                   contentType: contentType, rangeHeader: range)
                }
            }
            if let protection, protection.method == "SAMPLE-AES", protection.map == nil, range == nil {
                // SAMPLE-AES MPEG-TS: streamed from disk, re-muxed PES packet by PES packet.
                let (key, iv) = try Self.sampleAESKey(session, protection)
                let (rendition, sequence) = session.map.position[file] ?? (file, 0)
                let ledger = session.continuity
                return try await reportingInvalid(file, session) { () throws(PlaybackError) -> PlaybackResponse in
                    try PlaybackResponse.clearingTransport(local, key: key, iv: iv, contentType: contentType,
                                                           continuity: ledger.start(rendition, sequence: sequence),
                                                           done: { ledger.end(rendition, sequence: sequence, $0) }) { [weak self] reason in
                        await self?.reportInvalid(session.token, path: file, reason: reason)
                    }
                }
            }
            if let protection, range == nil, let decryptor = try await fmp4Decryptor(protection, session) {
                // CMAF cenc / cbcs: streamed from disk fragment by fragment, decrypted where it is read.
                let key = try Self.key(session.keys, of: decryptor)
                return try await reportingInvalid(file, session) { () throws(PlaybackError) -> PlaybackResponse in
                    try PlaybackResponse.clearing(local, decryptor: decryptor, key: key, contentType: contentType)
                }
            }
        } else if protection == nil, !clearsInit, range == nil, let remote = session.asset.origin[file] {
            return try await streamFromOrigin(file, remote, session, contentType: contentType)
        }
        // In memory: decrypted whole, or fetched whole for a byte range.
        let bytes = try await whole(file, session)
        if let protection {
            return try PlaybackResponse.ranged(try await decrypt(file, bytes, protection, session), contentType: contentType, rangeHeader: range)
        }
        if clearsInit {
            let clear = try await reportingInvalid(file, session) { () throws(PlaybackError) -> [UInt8] in
                do { return try FMP4Decryptor.clearInitSegment(bytes) } catch { throw .invalidContent("\(file): \(error)") }
            }
            return try PlaybackResponse.ranged(clear, contentType: contentType, rangeHeader: range)
        }
        return try PlaybackResponse.ranged(bytes, contentType: contentType, rangeHeader: range)
    }

    /// Forwards a player's key or license request (pass-through mode) to the key URI the playlist wrote, with the
    /// configured extras: custom data goes into a JSON object body as `customData`, else in its header. Only while
    /// the rights allow playback; the answer comes back as the server gave it (an error status as that status).
    nonisolated func forward(token: String, path: String, post body: [UInt8]?, contentType: String?) async throws(PlaybackError) -> PlaybackResponse {
        guard let session = await session(token), let extras = configuration.forwarding, let target = session.forwarding?.target(path) else {
            throw .notFound
        }
        try await checkRights(session)
        var payload = body
        var inBody = false
        if let customData = extras.customData, let body, contentType?.lowercased().contains("json") == true,
           var object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(body)),
           case nil = object["customData"] {
            object["customData"] = .string(customData)
            if let encoded = try? JSONEncoder().encode(object) {
                payload = Array(encoded)
                inBody = true
            }
        }
        var headers = extras.httpHeaders(bodyCarriesCustomData: inBody)
        if let contentType, body != nil { headers.append(("Content-Type", contentType)) }
        let sent = payload
        let answer = try await reportingOrigin(path, session) { () async throws(PlaybackError) -> OriginFetcher.Exchange in
            try await origin.exchange(target, body: sent, headers: headers, limit: KeyForwarding.maximumAnswer)
        }
        return PlaybackResponse(body: .bytes(answer.body), contentType: answer.contentType ?? "application/octet-stream", range: nil,
                                size: Int64(answer.body.count))
    }

    /// Rights are checked again before every segment: ended rights stop the session's media (event once).
    nonisolated func checkRights(_ session: PlaybackSession) async throws(PlaybackError) {
        guard let rights, session.isProtected else { return }
        let status = try await rights.playbackStatus(asset: session.asset.licenseAsset ?? session.assetID)
        guard status == .valid else {
            _ = await end(session.token, status: status)
            throw .notPlayable(status)
        }
    }

    /// A file of the session whole: from disk, else from the origin (kept in the store when the asset is being
    /// downloaded), else 503 with `notCached` for a file the playlists list.
    nonisolated func whole(_ file: String, _ session: PlaybackSession) async throws(PlaybackError) -> [UInt8] {
        if let local = try session.asset.openLocal(file) { return try Self.read(local) }
        guard let remote = session.asset.origin[file] else {
            guard session.map.listed.contains(file) else { throw .notFound }
            await report(.notCached(asset: session.assetID, path: file))
            throw .notCached(file)
        }
        let bytes = try await reportingOrigin(file, session) { () async throws(PlaybackError) -> [UInt8] in
            try await origin.fetch(remote, headers: session.asset.originHeaders, limit: Self.maximumFile)
        }
        if let fill = session.asset.fill, remote.expectedSize.map({ $0 == Int64(bytes.count) }) ?? true { _ = fill(file, bytes) }
        return bytes
    }

    /// A clear file from the origin, sent as it arrives (chunked when the origin gives no length: nothing is
    /// held whole in memory), and kept in the store once whole, when the asset is being downloaded.
    private nonisolated func streamFromOrigin(_ file: String, _ remote: OriginFile, _ session: PlaybackSession,
                                              contentType: String) async throws(PlaybackError) -> PlaybackResponse {
        let answer = try await reportingOrigin(file, session) { () async throws(PlaybackError) -> OriginFetcher.Answer in
            try await origin.open(remote, headers: session.asset.originHeaders)
        }
        if let length = answer.length, length > Self.maximumFile { throw .invalidContent("\(file) is larger than \(Self.maximumFile >> 20) MB") }
        if let length = answer.length, let expected = remote.expectedSize, expected != length {
            throw .originUnreachable("the origin announced \(length) bytes for \(file), where \(expected) were expected")
        }
        // Kept in the store only when its size is known beforehand (announced, or planned) and all of it arrives.
        var keep: (@Sendable ([UInt8]) -> Void)?
        let expected = answer.length ?? remote.expectedSize
        if let fill = session.asset.fill, expected != nil {
            keep = { bytes in if Int64(bytes.count) == expected { _ = fill(file, bytes) } }
        }
        let assetID = session.assetID
        let feed = OriginFeed(body: answer.body, length: answer.length, limit: Self.maximumFile, slowest: configuration.originPace, keep: keep, failed: { reason in
            await self.report(.serverError(asset: assetID, path: file, status: nil, reason: reason))
        })
        return PlaybackResponse(body: answer.length == 0 ? .empty : .origin(feed), contentType: contentType, range: nil, size: answer.length)
    }

    /// Runs an origin request; its failure is reported (`serverError`) before it reaches the player.
    nonisolated func reportingOrigin<T>(_ file: String, _ session: PlaybackSession,
                                                _ work: () async throws(PlaybackError) -> T) async throws(PlaybackError) -> T {
        do {
            return try await work()
        } catch {
            switch error {
            case let .originStatus(status):
                await report(.serverError(asset: session.assetID, path: file, status: status, reason: "the origin answered \(status)"))
            case let .originUnreachable(reason):
                await report(.serverError(asset: session.assetID, path: file, status: nil, reason: reason))
            default: break
            }
            throw error
        }
    }

    /// A protected segment, clear, in memory: AES-128 (fetched from the origin), SAMPLE-AES MPEG-TS, or CMAF
    /// `cbcs` / `cenc` (SAMPLE-AES / SAMPLE-AES-CTR with an init segment).
    private nonisolated func decrypt(_ file: String, _ bytes: [UInt8], _ protection: SegmentProtection,
                                     _ session: PlaybackSession) async throws(PlaybackError) -> [UInt8] {
        let decryptor = try await fmp4Decryptor(protection, session)
        return try await reportingInvalid(file, session) { () throws(PlaybackError) -> [UInt8] in
            do {
                switch (protection.method, decryptor) {
                case ("AES-128", _):
                    return try Self.cipher(session, protection).decrypt(bytes, iv: protection.iv)
                case ("SAMPLE-AES", nil):
                    let (key, iv) = try Self.sampleAESKey(session, protection)
                    let (rendition, sequence) = session.map.position[file] ?? (file, 0)
                    var continuity = session.continuity.start(rendition, sequence: sequence)
                    let clear = try SampleAESTransport.decrypt(bytes, key: key, iv: iv, continuity: &continuity)
                    session.continuity.end(rendition, sequence: sequence, continuity)
                    return clear
                case let ("SAMPLE-AES", decryptor?), let ("SAMPLE-AES-CTR", decryptor?):
                    return try decryptor.clearSegment(bytes, key: try Self.key(session.keys, of: decryptor))
                default:
                    throw PlaybackError.invalidContent("\(protection.method) segments\(protection.map == nil ? "" : " with an init segment") cannot be decrypted")
                }
            } catch let error as PlaybackError {
                throw error
            } catch {
                throw PlaybackError.invalidContent("\(file) does not decrypt: \(error)")
            }
        }
    }

    /// The key and IV of a SAMPLE-AES MPEG-TS segment: the key tag's IV when it gives one, else the key's own.
    private static func sampleAESKey(_ session: PlaybackSession, _ protection: SegmentProtection) throws(PlaybackError) -> (SecretBytes, [UInt8]) {
        let key = try Self.key(session, protection.keyURI)
        return (key.key, protection.ivFromTag ? protection.iv : key.iv ?? protection.iv)
    }

    /// The CMAF decryptor of a segment protected with an init segment (its `tenc`, read once per session).
    private nonisolated func fmp4Decryptor(_ protection: SegmentProtection, _ session: PlaybackSession) async throws(PlaybackError) -> FMP4Decryptor? {
        guard let initSegment = protection.map, protection.method != "AES-128" else { return nil }
        return try await session.decryptors.value(for: initSegment) { () async throws(PlaybackError) -> FMP4Decryptor in
            let bytes = try await whole(initSegment, session)
            return try await reportingInvalid(initSegment, session) { () throws(PlaybackError) -> FMP4Decryptor in
                do { return try FMP4Decryptor(initSegment: bytes) } catch { throw .invalidContent("\(initSegment): \(error)") }
            }
        }
    }

    /// The license's key for a CMAF track's key ID.
    static func key(_ keys: [PlaybackKey], of decryptor: FMP4Decryptor) throws(PlaybackError) -> SecretBytes {
        guard let key = keys.first(where: { $0.keyID.lowercased() == decryptor.keyID.hex }) else {
            throw .noKey("the license holds no key for key ID \(decryptor.keyID.hex)")
        }
        return key.key
    }

    /// Runs `work`; content that does not parse or decrypt is reported as `invalidContent` (once until a file
    /// plays well), a key the license does not hold as `shouldAbort`.
    nonisolated func reportingInvalid<T>(_ file: String, _ session: PlaybackSession,
                                                 _ work: () throws(PlaybackError) -> T) async throws(PlaybackError) -> T {
        do {
            let result = try work()
            if session.invalidReported { await parsedWell(session.token) }
            return result
        } catch {
            switch error {
            case let .invalidContent(reason): await reportInvalid(session.token, path: file, reason: reason)
            case let .noKey(reason): await report(.shouldAbort(asset: session.assetID, reason: reason))
            default: break
            }
            throw error
        }
    }

    /// The AES-128 cipher of a segment's key.
    private static func cipher(_ session: PlaybackSession, _ protection: SegmentProtection) throws(PlaybackError) -> SegmentCipher {
        let key = try key(session, protection.keyURI)
        do { return try SegmentCipher(key: key.key) } catch { throw .invalidContent("the license's key does not fit AES-128 (\(error))") }
    }

    /// The key for a segment whose key tag names `keyURI`.
    private static func key(_ session: PlaybackSession, _ keyURI: String?) throws(PlaybackError) -> PlaybackKey {
        guard let key = session.key(for: keyURI) else { throw .noKey("the license holds no key for this segment") }
        return key
    }

    /// A playlist of the asset: held in memory (an online source) or on disk.
    static func playlist(_ path: String, of asset: PlayableAsset) throws(PlaybackError) -> String {
        if let text = asset.manifests[path] { return text }
        guard let local = try asset.openLocal(path) else { throw .notFound }
        return String(decoding: try read(local), as: UTF8.self)
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

    /// The path as logged: the session token never reaches a log.
    static let redact: @Sendable (String) -> String = { path in
        let parts = path.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: true)
        return parts.count == 2 ? "/<session>/\(parts[1])" : "/<session>"
    }
}
