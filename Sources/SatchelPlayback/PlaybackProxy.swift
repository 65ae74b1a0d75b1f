import Foundation
import Hummingbird
import Logging
import NIOCore
import SatchelAgent
import SatchelHTTP
import SatchelProtection
import SatchelRights
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

        /// Creates a configuration.
        public init(host: String = "127.0.0.1", port: Int = 0, mode: PlaybackMode = .decrypt) {
            self.host = host
            self.port = port
            self.mode = mode
        }
    }

    /// Files larger than this are not served (a segment, a playlist).
    static let maximumFile: Int64 = 512 << 20

    let library: any PlaybackLibrary
    let rights: (any PlaybackRights)?
    let configuration: Configuration
    let logger: Logger
    private var sessions: [String: PlaybackSession] = [:]
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
        self.logger = logger
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    /// Starts listening; answers the port.
    public func start() async throws(PlaybackError) -> Int {
        if let boundPort { return boundPort }
        var builder = ApplicationBuilder(host: configuration.host, port: configuration.port, logger: logger)
        builder.redactPath = Self.redact
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

    /// Stops listening, closes every session and ends the event stream.
    public func stop() async {
        await group?.triggerGracefulShutdown()
        _ = await task?.result
        task = nil
        group = nil
        for session in sessions.values { continuation.yield(.closed(asset: session.assetID)) }
        sessions = [:]
        continuation.finish()
    }

    /// Opens a session for a downloaded asset: its window must allow playback and, when it is protected, its
    /// rights must be `valid` (the agent registers the first use). Answers the URL of its entry point.
    public func open(asset assetID: String) async throws(PlaybackError) -> String {
        let port = try await start()
        let asset = try await library.openForPlayback(assetID)
        let folder = asset.folder
        let map = try HLSAssetMap.build(entry: asset.entry) { (path: String) throws(PlaybackError) -> String in
            String(decoding: try Self.read(folder, path), as: UTF8.self)
        }
        var keys: [PlaybackKey] = []
        if map.isProtected {
            // Protected content opens only with rights valid now, in either mode; decrypting takes the keys too.
            guard let rights else { throw .notPlayable(.noRights) }
            let opened = try await rights.playbackKeys(asset: assetID)
            if configuration.mode == .decrypt { keys = opened }
        }
        let session = PlaybackSession(token: PlaybackSession.makeToken(), assetID: assetID, asset: asset, map: map,
                                      mode: configuration.mode, keys: keys)
        sessions[session.token] = session
        continuation.yield(.opened(asset: assetID))
        let host = configuration.host == "::1" ? "[::1]" : configuration.host
        return "http://\(host):\(port)/\(session.token)/\(asset.entry)"
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

    /// Answers one request of a session.
    nonisolated func respond(token: String, path: String, range: String?) async throws(PlaybackError) -> PlaybackResponse {
        guard let session = await session(token), let file = HLSAssetMap.resolve(path, from: "") else { throw .notFound }
        let isPlaylist = session.map.playlists.contains(file)
        if !isPlaylist, session.map.isProtected || session.ended {
            try await checkRights(session)
        }
        let folder = session.asset.folder
        if session.map.listed.contains(file), !FileManager.default.fileExists(atPath: folder + "/" + file) {
            await report(.notCached(asset: session.assetID, path: file))
            throw .notCached(file)
        }
        if isPlaylist {
            let text = String(decoding: try Self.read(folder, file), as: UTF8.self)
            let served = session.mode == .decrypt ? HLSAssetMap.clearPlaylist(text) : text
            return PlaybackResponse(body: .bytes(Array(served.utf8)), contentType: ContentTypes.type(of: file), range: nil, size: Int64(served.utf8.count))
        }
        if session.mode == .decrypt, let protection = session.map.segments[file], protection.method == "AES-128" {
            return try await reportingInvalid(file, session) { () throws(PlaybackError) -> PlaybackResponse in
                let cipher: SegmentCipher
                do { cipher = try SegmentCipher(key: try Self.key(session, protection.keyURI).key) } catch let error as PlaybackError { throw error } catch {
                    throw .invalidContent("the license's key does not fit AES-128 (\(error))")
                }
                return try PlaybackResponse.decrypting(folder + "/" + file, cipher: cipher, iv: protection.iv,
                                                       contentType: ContentTypes.type(of: file), rangeHeader: range)
            }
        }
        if session.mode == .decrypt, let protection = session.map.segments[file] {
            let clear = try await decrypt(file, protection, session)
            return try PlaybackResponse.ranged(clear, contentType: ContentTypes.type(of: file), rangeHeader: range)
        }
        if session.mode == .decrypt, session.map.protectedInitSegments.contains(file) {
            let clear = try await clearInit(file, session)
            return try PlaybackResponse.ranged(clear, contentType: ContentTypes.type(of: file), rangeHeader: range)
        }
        return try PlaybackResponse.file(folder + "/" + file, contentType: ContentTypes.type(of: file), rangeHeader: range)
    }

    /// Rights are checked again before every segment: ended rights stop the session's media (event once).
    private nonisolated func checkRights(_ session: PlaybackSession) async throws(PlaybackError) {
        guard let rights, session.map.isProtected else { return }
        let status = try await rights.playbackStatus(asset: session.assetID)
        guard status == .valid else {
            _ = await end(session.token, status: status)
            throw .notPlayable(status)
        }
    }

    /// A protected segment, clear, in memory: SAMPLE-AES MPEG-TS, or CMAF `cbcs` / `cenc` (SAMPLE-AES /
    /// SAMPLE-AES-CTR with an init segment). AES-128 segments stream instead (``PlaybackBody``).
    private nonisolated func decrypt(_ file: String, _ protection: SegmentProtection, _ session: PlaybackSession) async throws(PlaybackError) -> [UInt8] {
        try await reportingInvalid(file, session) { () throws(PlaybackError) -> [UInt8] in
            let bytes = try Self.read(session.asset.folder, file)
            do {
                switch (protection.method, protection.map) {
                case ("SAMPLE-AES", nil):
                    let key = try Self.key(session, protection.keyURI)
                    let iv = protection.ivFromTag ? protection.iv : key.iv ?? protection.iv
                    return try SampleAESTransport.decrypt(bytes, key: key.key, iv: iv)
                case let ("SAMPLE-AES", initSegment?), let ("SAMPLE-AES-CTR", initSegment?):
                    let decryptor = try FMP4Decryptor(initSegment: Self.read(session.asset.folder, initSegment))
                    guard let key = session.keys.first(where: { $0.keyID.lowercased() == decryptor.keyID.hex }) else {
                        throw PlaybackError.invalidContent("the license holds no key for key ID \(decryptor.keyID.hex)")
                    }
                    return try decryptor.clearSegment(bytes, key: key.key)
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

    /// A protected init segment without its protection (the original sample entry returns).
    private nonisolated func clearInit(_ file: String, _ session: PlaybackSession) async throws(PlaybackError) -> [UInt8] {
        try await reportingInvalid(file, session) { () throws(PlaybackError) -> [UInt8] in
            let bytes = try Self.read(session.asset.folder, file)
            do { return try FMP4Decryptor.clearInitSegment(bytes) } catch { throw PlaybackError.invalidContent("\(file): \(error)") }
        }
    }

    /// Runs `work`; content that does not parse or decrypt is reported as an `invalidContent` event.
    private nonisolated func reportingInvalid<T>(_ file: String, _ session: PlaybackSession,
                                                 _ work: () throws(PlaybackError) -> T) async throws(PlaybackError) -> T {
        do {
            return try work()
        } catch {
            if case let .invalidContent(reason) = error { await report(.invalidContent(asset: session.assetID, path: file, reason: reason)) }
            throw error
        }
    }

    /// The key for a segment whose key tag names `keyURI`.
    private static func key(_ session: PlaybackSession, _ keyURI: String?) throws(PlaybackError) -> PlaybackKey {
        guard let key = session.key(for: keyURI) else { throw .invalidContent("the license holds no key for this segment") }
        return key
    }

    /// A file of an asset's folder (the path is already confined to it).
    static func read(_ folder: String, _ path: String) throws(PlaybackError) -> [UInt8] {
        let full = folder + "/" + path
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: full),
              attributes[.type] as? FileAttributeType == .typeRegular else { throw .notFound }
        if let size = attributes[.size] as? Int64, size > maximumFile { throw .invalidContent("\(path) is larger than \(maximumFile >> 20) MB") }
        guard let data = FileManager.default.contents(atPath: full) else { throw .notFound }
        return Array(data)
    }

    /// The path as logged: the session token never reaches a log.
    static let redact: @Sendable (String) -> String = { path in
        let parts = path.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: true)
        return parts.count == 2 ? "/<session>/\(parts[1])" : "/<session>"
    }
}
