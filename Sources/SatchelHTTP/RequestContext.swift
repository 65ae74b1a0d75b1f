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
        guard let value = headers[.authorization], value.utf8.count > 7,
              String(decoding: value.utf8.prefix(7), as: UTF8.self).lowercased() == "bearer " else { return nil }
        let token = value.utf8.dropFirst(7).drop { $0 == UInt8(ascii: " ") }
        let trimmed = String(decoding: token.reversed().drop { $0 == UInt8(ascii: " ") }.reversed(), as: UTF8.self)
        return trimmed.isEmpty ? nil : trimmed
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
