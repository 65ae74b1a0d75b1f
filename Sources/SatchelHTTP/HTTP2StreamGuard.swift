import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOHTTPTypes
import SatchelBytes

/// An HTTP/2 connection's part of ``ConnectionLimits``, on the connection's pipeline: it counts the open streams, so a
/// connection with none is idle for the registry (it may be closed to make room, and meets the idle timeout, like an
/// idle HTTP/1.1 connection; one that only sent its preface and pings holds nothing), refuses a stream past
/// ``maxStreams``, and keeps the request bodies its streams have received and not finished under
/// ``maxBufferedBytes`` (what the application may be holding for them). Used only on the connection's event loop
/// (its streams share it).
final class HTTP2ConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    /// Streams one connection may have open at once.
    static let maxStreams = 32
    /// Bytes of unfinished request bodies one connection's streams may have sent.
    static let maxBufferedBytes = 4 << 20
    let watch: ConnectionWatch
    private(set) var openStreams = 0
    private var bufferedBytes = 0

    /// `count` more bytes of a body in progress: false when the connection's budget would be passed.
    func buffer(_ count: Int) -> Bool {
        guard bufferedBytes + count <= Self.maxBufferedBytes else { return false }
        bufferedBytes += count
        return true
    }

    /// A stream's `count` bytes of body are done with (its request ended, or it closed).
    func release(_ count: Int) {
        bufferedBytes = max(0, bufferedBytes - count)
    }

    init(watch: ConnectionWatch) {
        self.watch = watch
    }

    /// A stream opened: false when the connection has as many as it may.
    func opened() -> Bool {
        guard openStreams < Self.maxStreams else { return false }
        openStreams += 1
        if openStreams == 1 { watch.enter(.busy) }
        return true
    }

    func closed() {
        openStreams = max(0, openStreams - 1)
        if openStreams == 0 { watch.enter(.idle) }
    }
}

/// On each HTTP/2 stream: the request body's deadline and minimum rate (``ConnectionLimits/bodyTimeout``,
/// ``ConnectionLimits/bodyMinimumRate``: 408 when it comes too slowly), a cap on its size (413: bytes nobody reads
/// must not pile up), and the connection's stream count (503 past it). A refused stream is answered and closed.
final class HTTP2StreamGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart
    /// The most bytes of body a stream may send (above the application's own limit, which answers 413 first when it reads).
    static let maximumBody = (1 << 20) + (64 << 10)
    private let limits: ConnectionLimits
    private var connection: HTTP2ConnectionGuard?
    private var counted = false
    private var refused = false
    private var responding = false
    private var readingBody = false
    private var bodyBytes = 0
    private var windowBytes = 0
    private var timer: Scheduled<Void>?

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    func handlerAdded(context: ChannelHandlerContext) {
        connection = try? context.channel.parent?.pipeline.syncOperations.handler(type: HTTP2ConnectionGuard.self)
        counted = connection?.opened() ?? false
        if connection != nil, !counted { refused = true }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        if readingBody { connection?.release(bodyBytes) }
        readingBody = false
        if counted { connection?.closed() }
        counted = false
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if refused, !responding {
            responding = true
            return respond(context, status: .serviceUnavailable, type: "too-many-streams",
                           detail: "the connection has \(HTTP2ConnectionGuard.maxStreams) streams open: wait for one to end")
        }
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head:
            readingBody = true
            arm(context)
        case let .body(buffer):
            guard readingBody else { break }
            let fits = connection?.buffer(buffer.readableBytes) ?? true
            bodyBytes += fits ? buffer.readableBytes : 0
            windowBytes += buffer.readableBytes
            if bodyBytes > Self.maximumBody || !fits {
                refused = true
                if !responding { return respond(context, status: .contentTooLarge, type: "too-large", detail: "the request body is too large") }
                return context.close(promise: nil)
            }
            if Double(windowBytes) >= Double(limits.bodyMinimumRate) * Self.seconds(limits.bodyTimeout) { arm(context) }
        case .end:
            if readingBody { connection?.release(bodyBytes) }
            readingBody = false
            timer?.cancel()
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .head = unwrapOutboundIn(data) { responding = true }
        context.write(data, promise: promise)
    }

    /// A new window of ``ConnectionLimits/bodyTimeout`` for the body: it must bring the minimum rate by then.
    private func arm(_ context: ChannelHandlerContext) {
        timer?.cancel()
        windowBytes = 0
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(Self.seconds(limits.bodyTimeout) * 1e9))) {
            let (guarding, context) = bound.value
            guard guarding.readingBody else { return }
            guarding.refused = true
            if guarding.responding { return context.close(promise: nil) }
            guarding.respond(context, status: .requestTimeout, type: "request-timeout",
                             detail: "the request body came too slowly: send it within \(guarding.limits.bodyTimeout)")
        }
    }

    private func respond(_ context: ChannelHandlerContext, status: HTTPResponse.Status, type: String, detail: String) {
        responding = true
        let body = ProblemDocument(status: status.code, type: type, detail: detail).json
        var head = HTTPResponse(status: status)
        head.headerFields[.contentType] = "application/problem+json"
        head.headerFields[.contentLength] = String(body.count)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
