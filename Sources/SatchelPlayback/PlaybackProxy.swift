import Foundation
import Hummingbird
import Logging
import SatchelHTTP
import SatchelRights
import SatchelStreams
import ServiceLifecycle

/// The playback proxy (the playlist proxy, the local HTTP server): a loopback server that hands a
/// player session URLs for downloaded, partly downloaded and online assets and serves their playlists and media,
/// decrypted for players without DRM. A session URL carries an unguessable token; a request without a live one gets
/// 404.
///
/// The actor keeps the server's lifecycle, the sessions and the events. A request never waits for it: its session is
/// found in a locked table, its path gets a `StreamRoute` from the session's router, the rights are evaluated in
/// memory (`SessionRights`), and the route's `SegmentSource` serves the bytes.
public actor PlaybackProxy {
    /// Files larger than this are not served (a segment, a playlist).
    static var maximumFile: Int64 { SessionFiles.maximumFile }

    let configuration: Configuration
    let logger: Logger
    private let opener: SessionOpener
    private let context: SourceContext
    private let sessions = SessionTable()
    private let slots: (any StreamSlots)?
    /// Each session's stream slot keeper, by its token.
    private var keepers: [String: SessionLeaseKeeper] = [:]
    /// The renewal keeper of each protected session, by token.
    private var renewers: [String: SessionRenewalKeeper] = [:]
    private var task: Task<Void, any Error>?
    private var group: ServiceGroup?
    private var boundPort: Int?
    /// Events, in order.
    public nonisolated let events: AsyncStream<PlaybackEvent>

    /// A proxy over `library`, with keys and rights from `rights` (the device agent; nil: clear content only), each
    /// session taking a concurrent-stream slot from `slots` (nil: no stream limit).
    public init(library: any PlaybackLibrary, rights: (any PlaybackRights)?, slots: (any StreamSlots)? = nil, configuration: Configuration = Configuration(),
                logger: Logger = Logger(label: "satchel.playback")) throws(PlaybackError) {
        guard ["127.0.0.1", "::1", "localhost"].contains(configuration.host) else { throw .notLoopback(configuration.host) }
        guard (0...65_535).contains(configuration.port) else { throw .storage("the port must be 0 to 65535") }
        self.configuration = configuration
        self.logger = logger
        self.slots = slots
        let (events, continuation) = AsyncStream.makeStream(of: PlaybackEvent.self, bufferingPolicy: .bufferingNewest(1024))
        self.events = events
        context = SourceContext(configuration: configuration, origin: OriginFetcher(slowest: configuration.originPace), events: EventSink(continuation))
        opener = SessionOpener(library: library, rights: rights, context: context)
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
        let open = sessions.all
        for session in open { context.events.report(.willAbort(asset: session.assetID, reason: "the playback proxy is stopping")) }
        await group?.triggerGracefulShutdown()
        _ = await task?.result
        task = nil
        group = nil
        await context.origin.shutdown()
        for session in sessions.remove() { context.events.report(.closed(asset: session.assetID)) }
        for keeper in keepers.values { await keeper.end() }
        keepers = [:]
        for renewer in renewers.values { await renewer.end() }
        renewers = [:]
        context.events.finish()
    }

    /// Opens a session for an asset of the library: its window must allow playback and, when it is protected, its
    /// rights must be `valid` (the rights source registers the first use), and a stream slot must be free. The rights
    /// are those of `licenseAsset`, else of the asset the library says it was licensed as, else of `assetID`. Answers
    /// the URL of its entry point.
    /// With `output`, the output the app plays to: a license that demands more of it refuses the session
    /// (``PlaybackError/outputNotAllowed(_:)``). With `audio`, the audio track to start with, by name or
    /// language: the player is offered it as the default, and every other track still
    /// (``PlaybackError/noSuchAudioTrack(wanted:available:)`` when the content has no such track).
    public func open(asset assetID: String, licenseAsset: String? = nil, output: OutputCapabilities? = nil,
                     audio: String? = nil) async throws(PlaybackError) -> String {
        let port = try await start()
        // The slot first: a stream refused registers no use of the asset (its first use starts its play window).
        let lease = try await slots?.acquire(asset: assetID)
        let session: PlaybackSession
        do throws(PlaybackError) {
            session = try await opener.open(assetID, licenseAsset: licenseAsset, audio: audio)
            if let output, let refusal = session.rights?.outputControls?.refusal(for: output) { throw PlaybackError.outputNotAllowed(refusal) }
            if let audio {
                let tracks = session.content.audioTracks
                guard let track = AudioSelection.track(audio, in: tracks) else {
                    throw PlaybackError.noSuchAudioTrack(wanted: audio, available: tracks.map(AudioSelection.label))
                }
                session.audio = track
            }
        } catch {
            if let slots, let lease { await slots.release(lease) }
            throw error
        }
        if let slots {
            let token = session.token
            keepers[token] = SessionLeaseKeeper(lease: lease, asset: assetID, slots: slots) { [weak self] reason in
                await self?.cut(token: token, reason: reason)
            }
        }
        if let sessionRights = session.rights {
            let token = session.token
            renewers[token] = SessionRenewalKeeper(asset: sessionRights.asset, rights: sessionRights.source) { [weak self] reason in
                await self?.cut(token: token, reason: reason, expired: true)
            }
        }
        sessions.insert(session)
        context.events.report(.opened(asset: assetID, cache: session.asset.cache))
        let host = configuration.host == "::1" ? "[::1]" : configuration.host
        let entry = session.router.transcript == nil ? session.asset.entry : HLSTranscript.masterPath
        return "http://\(host):\(port)/\(session.token)/\(Self.encodedPath(entry))"
    }

    /// What the content of the open session at `url` is, with the output controls its license demands (nil: no
    /// such session).
    public func info(url: String) -> ContentInfo? {
        guard let session = sessions.all.first(where: { url.contains("/\($0.token)/") }) else { return nil }
        var info = session.content
        info.outputControls = session.rights?.outputControls
        return info
    }

    /// What an asset's content is — protected or not, its schemes, its audio tracks — learned as a session would
    /// open, without rights or keys: asked before any license is needed. No session is left open.
    public func inspect(asset assetID: String, licenseAsset: String? = nil) async throws(PlaybackError) -> ContentInfo {
        var inspector = opener
        inspector.inspecting = true
        return try await inspector.open(assetID, licenseAsset: licenseAsset).content
    }

    /// Closes the session whose URL is `url` (its token stops working at once).
    public func close(url: String) async {
        for session in sessions.remove(where: { url.contains("/\($0.token)/") }) {
            context.events.report(.closed(asset: session.assetID))
            await keepers.removeValue(forKey: session.token)?.end()
            await renewers.removeValue(forKey: session.token)?.end()
        }
    }

    /// Cuts a session whose stream slot was lost (its lease ended and the account's limit is reached), or whose license
    /// renewal was refused (`expired`: the rights-expired notice first).
    private func cut(token: String, reason: String, expired: Bool = false) {
        keepers[token] = nil
        renewers[token]?.task.cancel()
        renewers[token] = nil
        for session in sessions.remove(where: { $0.token == token }) {
            if expired { context.events.report(.rightsExpired(asset: session.assetID, status: .expired)) }
            context.events.report(.willAbort(asset: session.assetID, reason: reason))
            context.events.report(.closed(asset: session.assetID))
        }
    }

    /// The number of open sessions.
    public var openSessions: Int { sessions.count }

    /// Answers one request of a session: a GET or HEAD (`body` nil), or a POST to a forwarded key URI. A HEAD gets the
    /// head alone: no body is made, nothing decrypted for it on disk, and it is no use (no playback window or
    /// expire-after-play starts with it). For a GET the body is made first, then the session's first use is
    /// registered: a segment refused as it is made clear starts nothing either.
    nonisolated func respond(token: String, path: String, range: String?, body: [UInt8]? = nil,
                             contentType: String? = nil, head: Bool = false) async throws(PlaybackError) -> (head: SegmentHead, body: (any SegmentBody)?) {
        guard let session = sessions[token], let file = HLSAssetMap.resolve(path, from: ""), let route = session.router.route(file) else {
            throw .notFound
        }
        if case .forwardedKey = route {} else if body != nil { throw .notFound }
        if route.carriesMedia, let rights = session.rights {
            let events = context.events
            try await rights.check { status in events.rightsEnded(session, status: status) }
        }
        let files = SessionFiles(session: session, context: context)
        let answer = try await route.source.answer(SourceRequest(files: files, range: range, body: body, contentType: contentType))
        guard !head else { return (answer.head, nil) }
        let made = try await answer.body()
        if route.carriesMedia { try await session.registerPlay() }
        return (answer.head, made)
    }

    /// A path of the asset as it goes into a session URL: every byte but letters, digits, `-._~` and `/`
    /// percent-encoded, so the URL holds only characters of the proxy's own choosing (a player command line, a
    /// shell, a log line read it as one word) whatever the origin named its files.
    static func encodedPath(_ path: String) -> String {
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/")
        return path.addingPercentEncoding(withAllowedCharacters: allowed) ?? path
    }

    /// The path as logged: the session token never reaches a log.
    static let redact: @Sendable (String) -> String = { path in
        let parts = path.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: true)
        return parts.count == 2 ? "/<session>/\(parts[1])" : "/<session>"
    }
}
