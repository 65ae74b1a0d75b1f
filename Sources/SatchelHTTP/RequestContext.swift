import Hummingbird
import NIOCore

/// Who made a request, once a token or a device credential has been checked.
public struct Identity: Sendable, Equatable {
    /// The user (the token's `sub`).
    public var subject: String
    /// The device, when the request came from a registered one.
    public var device: String?

    /// An identity for `subject` on `device`.
    public init(subject: String, device: String? = nil) {
        self.subject = subject
        self.device = device
    }
}

/// A request context that carries the authenticated identity.
public protocol IdentifiedRequestContext: RequestContext {
    /// Set by ``AuthenticationMiddleware`` once the request's credential is verified; nil before.
    var identity: Identity? { get set }
}

/// The request context of every Satchel server.
public struct SatchelRequestContext: IdentifiedRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var identity: Identity?
    /// The connection the request came on (for ``FileSend``).
    public let channel: any Channel

    public init(source: Source) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

extension Request {
    /// The token of an `Authorization: Bearer …` header (scheme case-insensitive, spaces trimmed), nil without one.
    public var bearerToken: String? {
        guard let value = headers[.authorization] else { return nil }
        let utf8 = Substring(value).utf8
        // "Bearer" in any case, then a space (read on every license request: no lower-cased copy is made).
        guard utf8.count > 7, utf8.prefix(6).elementsEqual("bearer".utf8, by: { ($0 | 0x20) == $1 }),
              utf8.dropFirst(6).first == UInt8(ascii: " ") else { return nil }
        var token = utf8.dropFirst(7)
        while token.first == UInt8(ascii: " ") { token = token.dropFirst() }
        while token.last == UInt8(ascii: " ") { token = token.dropLast() }
        return token.isEmpty ? nil : String(decoding: token, as: UTF8.self)
    }
}

/// Verifies the bearer token of every request that has one and puts who it names into the context.
/// A request without a token passes with no identity (routes that need one refuse it: see ``requireIdentity()``);
/// a token that does not verify is refused with the verifier's error, as problem+json.
public struct AuthenticationMiddleware<Context: IdentifiedRequestContext>: RouterMiddleware {
    let verify: @Sendable (String) async throws -> Identity

    /// A middleware verifying tokens with `verify`.
    public init(verify: @escaping @Sendable (String) async throws -> Identity) {
        self.verify = verify
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let token = request.bearerToken { context.identity = try await verify(token) }
        return try await next(request, context)
    }
}

extension IdentifiedRequestContext {
    /// The identity, or a 401 problem when the request carried no credential.
    public func requireIdentity() throws -> Identity {
        guard let identity else {
            throw Problem(status: .unauthorized, type: "missing-credential", detail: "this endpoint needs Authorization: Bearer <token>")
        }
        return identity
    }
}
