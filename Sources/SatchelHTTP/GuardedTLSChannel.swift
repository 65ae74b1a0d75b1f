import HummingbirdCore
import SatchelBytes
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL
import NIOTLS

/// HTTPS with the same ``ConnectionLimits`` as ``GuardedHTTP1Channel``: the guard counts the connection before TLS
/// (a handshake that never comes meets the header timeout), then TLS with the ``TLSIdentity`` in force at the
/// handshake, then HTTP/2 when the client offers it by ALPN, else HTTP/1.1 under the request guard. Over TLS no
/// response is sent by `sendfile` (the bytes must be encrypted): ``FileSend`` answers with the file's bytes.
public struct GuardedTLSChannel: ServerChildChannel, HTTPChannelHandler {
    /// The protocol ALPN chose, set up.
    enum Negotiated: Sendable {
        case http1_1(AcceptedConnection)
        case http2(HTTP2Channel.Value)
    }

    /// A connection once ALPN has chosen its protocol.
    public struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        /// The connection's channel.
        public let channel: any Channel
    }

    /// The application's responder.
    public let responder: HTTPChannelHandler.Responder
    private let registry: ConnectionRegistry
    private let context: NIOSSLContext
    private let http2: HTTP2Channel

    /// A channel answering with `responder` over TLS with `identity`, under the registry's limits.
    public init(responder: @escaping HTTPChannelHandler.Responder, registry: ConnectionRegistry, identity: TLSIdentity) throws {
        self.responder = responder
        self.registry = registry
        context = try NIOSSLContext(configuration: identity.serverConfiguration())
        let limits = registry.limits
        http2 = HTTP2Channel(responder: responder, configuration: .init(
            idleTimeout: registry.limits.idleTimeout,
            streamConfiguration: .init(additionalChannelHandlers: [HTTP2StreamGuard(limits: limits)])))
    }

    /// The guard, TLS, and the protocol negotiation whose outcome sets up HTTP/2 or the guarded HTTP/1.1.
    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let watch = ConnectionWatch(registry: registry, channel: channel)
        return channel.eventLoop.makeCompletedFuture { () throws -> EventLoopFuture<Negotiated> in
            let operations = channel.pipeline.syncOperations
            try operations.addHandler(ByteWatcher(watch: watch))
            try operations.addHandler(NIOSSLServerHandler(context: context))
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                switch result {
                case .negotiated("h2"):
                    // The connection is idle until a stream opens and again once its streams have closed (the
                    // connection guard counts them): idle, it may make room for another and meets the idle timeout.
                    do { try channel.pipeline.syncOperations.addHandler(HTTP2ConnectionGuard(watch: watch)) } catch {
                        return channel.eventLoop.makeFailedFuture(error)
                    }
                    watch.multiplexed = true
                    watch.enter(.idle)
                    return self.http2.setup(channel: channel, logger: logger).map { .http2($0) }
                case .negotiated("http/1.1"), .fallback:
                    return GuardedHTTP1Channel.http1(channel: channel, watch: watch, responder: responder, logger: logger).map { .http1_1($0) }
                case .negotiated:
                    return channel.close().flatMapThrowing { throw UnexpectedProtocol() }
                }
            }
            try operations.addHandler(negotiation)
            return negotiation.protocolNegotiationResult
        }.map { Value(negotiated: $0, channel: channel) }
    }

    /// Serves the connection: its HTTP/1.1 requests, or its HTTP/2 streams.
    public func handle(value: Value, logger: Logger) async {
        guard let negotiated = try? await value.negotiated.get() else { return }  // the handshake failed or the peer left
        await ConnectionExecutor.serving(value.channel) {
            switch negotiated {
            case let .http1_1(connection): await handleHTTP(asyncChannel: connection.taken(), logger: logger)
            case let .http2(connection): await http2.handle(value: connection, logger: logger)
            }
        }
    }
}

extension HTTPServerBuilder {
    /// An HTTPS server (HTTP/2 by ALPN, else HTTP/1.1) with ``ConnectionLimits`` enforced through `registry`.
    public static func guardedTLS(registry: ConnectionRegistry, identity: TLSIdentity) -> HTTPServerBuilder {
        .init { responder in try GuardedTLSChannel(responder: responder, registry: registry, identity: identity) }
    }
}

/// ALPN chose a protocol the server did not offer (the connection is closed): `unexpected-protocol`.
struct UnexpectedProtocol: ProblemConvertible {
    var code: String { "unexpected-protocol" }
    var description: String { "the client chose a protocol by ALPN that the server does not offer" }
}
