import SatchelBytes
import HTTPTypes
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// Hummingbird's HTTP/1.1 child channel with ``ConnectionLimits`` enforced: a header-read timeout, a body-read
/// timeout with a low-speed floor (408), an idle timeout, a connection cap with eviction of waiting connections, a
/// reserve for health checks, and a clean problem+json refusal beyond it. Malformed HTTP is answered 400 as
/// problem+json.
public struct GuardedHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    public typealias Value = AcceptedConnection

    /// The application's responder.
    public let responder: HTTPChannelHandler.Responder
    private let registry: ConnectionRegistry

    /// A channel answering with `responder` under the registry's limits.
    public init(responder: @escaping HTTPChannelHandler.Responder, registry: ConnectionRegistry) {
        self.responder = responder
        self.registry = registry
    }

    /// Sets up the pipeline: the guard first (it sees raw bytes), ``FileSendHandler`` (it sends ``FileSend``'s file
    /// regions), then Hummingbird's HTTP/1.1 handlers, with the request watcher among them (it sees request heads and
    /// response ends).
    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let watch = ConnectionWatch(registry: registry, channel: channel)
        do {
            try channel.pipeline.syncOperations.addHandler(ByteWatcher(watch: watch))
            try channel.pipeline.syncOperations.addHandler(FileSendHandler())  // below the HTTP encoder
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
        return Self.http1(channel: channel, watch: watch, responder: responder, logger: logger)
    }

    /// Hummingbird's HTTP/1.1 handlers with the request watcher among them, on a channel whose bytes `watch` sees.
    static func http1(channel: any Channel, watch: ConnectionWatch, responder: @escaping HTTPChannelHandler.Responder,
                      logger: Logger) -> EventLoopFuture<AcceptedConnection> {
        let inner = HTTP1Channel(responder: responder, configuration: .init(additionalChannelHandlers: [RequestWatcher(watch: watch)]))
        return inner.setup(channel: channel, logger: logger).map(AcceptedConnection.init)
    }

    /// Serves the connection's requests.
    public func handle(value connection: Value, logger: Logger) async {
        await ConnectionExecutor.serving(connection.channel) { await handleHTTP(asyncChannel: connection.taken(), logger: logger) }
    }
}

/// A connection accepted and set up, waiting for the server's accept loop to serve it. When the loop stops first
/// (the server's task cancelled while connections wait in its queue), the connection is released unserved and is
/// closed here at once; NIO's own wrapper would stop the whole process instead (a writer released unfinished,
/// apple/swift-nio#3481, swift-server/swift-http-server#137).
public final class AcceptedConnection: ServerChildChannelValue {
    private let asyncChannel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>
    private let served = Locked(false)

    init(_ asyncChannel: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>) {
        self.asyncChannel = asyncChannel
    }

    /// The connection's channel.
    public var channel: any Channel { asyncChannel.channel }

    /// The connection, for serving: from now on its closing is the server's business.
    func taken() -> NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart> {
        served.withLock { $0 = true }
        return asyncChannel
    }

    deinit {
        guard !served.withLock({ $0 }) else { return }
        let unserved = asyncChannel
        // Closed now, from whichever thread lets it go: the peer learns at once, even while every thread of the
        // concurrency pool is busy (a loaded machine ran the task below 30 s late). The task then finishes the
        // writer, which must not be released unfinished.
        unserved.channel.close(promise: nil)
        Task { try? await unserved.executeThenClose { _, _ in } }
    }
}

extension HTTPServerBuilder {
    /// An HTTP/1.1 server with ``ConnectionLimits`` enforced through `registry`.
    public static func guardedHTTP1(registry: ConnectionRegistry) -> HTTPServerBuilder {
        .init { responder in GuardedHTTP1Channel(responder: responder, registry: registry) }
    }
}

/// One connection's state and deadline; used only on the connection's event loop. One timer at a time is
/// armed; a transition to a later deadline only moves the deadline, and the timer, when it fires, closes the
/// connection or re-arms itself for the deadline now in force (no timer churn per request). A transition to an
/// earlier deadline than the armed timer's (idle after a request whose body timer was armed) arms a timer for it:
/// an idle connection is closed on time, not when a longer timer happens to fire.
final class ConnectionWatch: @unchecked Sendable {
    let registry: ConnectionRegistry
    let channel: any Channel
    var admission = ConnectionRegistry.Admission.accept
    private(set) var activity = ConnectionRegistry.Activity.readingHead
    private var deadline: NIODeadline?
    /// When the timer now scheduled fires (nil: none is).
    private var armedFor: NIODeadline?
    private var timer: Scheduled<Void>?
    /// Bytes of the request body that arrived in the current window (``ConnectionLimits/bodyTimeout``).
    private var windowBytes = 0
    /// Answers 408 and closes, when a body is too slow (set by the request watcher, which can respond).
    var bodyTimedOut: (() -> Void)?
    /// HTTP/2: its streams say when it is busy (``HTTP2ConnectionGuard``); bytes on it while idle (pings, window
    /// updates, settings) are not the start of a request head.
    var multiplexed = false
    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    init(registry: ConnectionRegistry, channel: any Channel) {
        self.registry = registry
        self.channel = channel
    }

    /// The connection opened: admitted, on the reserve, or refused.
    func opened() -> ConnectionRegistry.Admission {
        admission = registry.open(id, channel: channel, now: channel.eventLoop.now)
        if admission != .refuse { enter(.readingHead) }
        return admission
    }

    /// The connection moves on: reading a head and idle have deadlines, busy has none.
    func enter(_ next: ConnectionRegistry.Activity) {
        activity = next
        let now = channel.eventLoop.now  // the loop's clock: the one its timers keep
        registry.update(id, next, now: now)
        let limit: Duration? = switch next {
        case .readingHead: registry.limits.headerTimeout
        case .readingBody: registry.limits.bodyTimeout
        case .idle: registry.limits.idleTimeout
        case .busy: nil
        }
        windowBytes = 0
        deadline = limit.map { now + Self.timeAmount($0) }
        arm()
    }

    /// Bytes of a request body arrived: once a window has brought ``ConnectionLimits/bodyMinimumRate`` on average,
    /// the next window starts (its deadline with it); a body slower than that meets the deadline.
    func bodyReceived(_ count: Int) {
        guard activity == .readingBody else { return }
        windowBytes = windowBytes.addingReportingOverflow(count).partialValue
        let limits = registry.limits
        let seconds = Double(limits.bodyTimeout.components.seconds) + Double(limits.bodyTimeout.components.attoseconds) / 1e18
        if Double(windowBytes) >= Double(limits.bodyMinimumRate) * seconds { enter(.readingBody) }
    }

    /// A timer for the deadline, unless one fires by then already. A deadline earlier than the armed timer's (idle
    /// after a body's long one) gets a timer of its own: the earlier one is cancelled.
    private func arm() {
        guard let deadline else { return }
        if let armedFor, armedFor <= deadline { return }
        timer?.cancel()
        armedFor = deadline
        timer = channel.eventLoop.scheduleTask(deadline: deadline) { [weak self] in self?.fire() }
    }

    private func fire() {
        (armedFor, timer) = (nil, nil)
        guard let deadline else { return }  // busy now: the next transition arms a timer again
        if channel.eventLoop.now >= deadline {
            if activity == .readingBody, let bodyTimedOut {
                self.deadline = nil
                bodyTimedOut()
            } else {
                channel.close(promise: nil)
            }
        } else {
            arm()  // the deadline moved on since this timer was armed
        }
    }

    /// `duration` as NIO's time amount (nanoseconds, saturating).
    static func timeAmount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(Int64(clamping: duration.components.seconds) &* 1_000_000_000 &+ duration.components.attoseconds / 1_000_000_000)
    }

    /// The connection closed.
    func closed() {
        deadline = nil
        timer?.cancel()
        (armedFor, timer) = (nil, nil)
        registry.close(id)
    }
}

/// First in the pipeline: admits the connection, notices the first byte of a request on an idle connection.
final class ByteWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    let watch: ConnectionWatch

    init(watch: ConnectionWatch) {
        self.watch = watch
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // Added to a channel that is already active: admit it once the pipeline is complete.
        guard context.channel.isActive else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute { bound.value.0.admit(bound.value.1) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context)
        context.fireChannelActive()
    }

    private var admitted = false

    private func admit(_ context: ChannelHandlerContext) {
        guard !admitted else { return }
        admitted = true
        if watch.opened() == .refuse {
            // Beyond the cap and the reserve: one plain 503 and close, before any HTTP handler runs.
            let body = ProblemDocument(status: 503, type: "too-many-connections", detail: "the server is at its connection limit; try again shortly").json
            let head = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: \(body.count)\r\n\r\n"
            let channel = context.channel
            context.writeAndFlush(NIOAny(ByteBuffer(bytes: Array(head.utf8) + body))).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if watch.admission == .refuse { return }
        if watch.activity == .idle, !watch.multiplexed { watch.enter(.readingHead) }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        watch.closed()
        context.fireChannelInactive()
    }
}

/// Among the HTTP handlers: a request head makes the connection busy, a response end makes it idle; on
/// a reserve connection only ``ConnectionLimits/alwaysServed`` paths pass. Malformed HTTP gets a 400.
final class RequestWatcher: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    let watch: ConnectionWatch
    /// The current request was answered here; its remaining parts are dropped.
    private var refusing = false
    private var responding = false

    init(watch: ConnectionWatch) {
        self.watch = watch
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        watch.bodyTimedOut = {
            let (watcher, context) = bound.value
            guard !watcher.responding, !watcher.refusing else { return context.close(promise: nil) }
            watcher.refusing = true
            watcher.respond(context, status: .requestTimeout, type: "request-timeout",
                            detail: "the request body came too slowly: send it within \(watcher.watch.registry.limits.bodyTimeout)")
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        watch.bodyTimedOut = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch part {
        case let .head(head):
            // Its body, if any, must arrive promptly; the request is being handled once it has.
            watch.enter(.readingBody)
            if watch.admission == .reserve, !watch.registry.limits.alwaysServed.contains(Self.path(head)) {
                refusing = true
                respond(context, status: .serviceUnavailable, type: "too-many-connections",
                        detail: "the server is at its connection limit; try again shortly")
                return
            }
        case let .body(buffer):
            watch.bodyReceived(buffer.readableBytes)
        case .end:
            if watch.activity == .readingBody { watch.enter(.busy) }
        }
        if refusing { return }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let part = unwrapOutboundIn(data)
        switch part {
        case .head: responding = true
        case .end:
            responding = false
            if watch.admission == .reserve {  // a reserve connection serves one request
                let written = context.eventLoop.makePromise(of: Void.self)
                context.writeAndFlush(data, promise: written)
                let channel = context.channel
                written.futureResult.whenComplete { result in
                    promise?.completeWith(result)
                    channel.close(promise: nil)
                }
                return
            }
            watch.enter(.idle)
        case .body: break
        }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A request that cannot be parsed: answered here as problem+json when no response is under way.
        guard !responding, !refusing, error is HTTPParserError else {
            context.fireErrorCaught(error)
            return
        }
        refusing = true
        respond(context, status: .badRequest, type: "bad-request", detail: "the request is not valid HTTP/1.1")
    }

    private func respond(_ context: ChannelHandlerContext, status: HTTPResponse.Status, type: String, detail: String) {
        let body = ProblemDocument(status: status.code, type: type, detail: detail).json
        var head = HTTPResponse(status: status)
        head.headerFields[.contentType] = "application/problem+json"
        head.headerFields[.contentLength] = String(body.count)
        head.headerFields[.connection] = "close"
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    private static func path(_ head: HTTPRequest) -> String {
        let target = head.path ?? "/"
        return String(target[..<(target.firstIndex(of: "?") ?? target.endIndex)])
    }
}
