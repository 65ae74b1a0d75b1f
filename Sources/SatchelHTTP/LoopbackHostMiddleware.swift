import HTTPTypes
import Hummingbird

/// Refuses a request to a loopback server whose `Host` is not a loopback name: `127.0.0.1`, `localhost` or
/// `[::1]`, with or without a port. A web page on another site can make a browser send requests to loopback
/// (DNS rebinding: its own name made to resolve to 127.0.0.1), but they carry that site's name as `Host`; refused
/// with 403 problem+json, they read nothing.
public struct LoopbackHostMiddleware<Context: RequestContext>: RouterMiddleware {
    /// A middleware for a loopback server.
    public init() {}

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.isLoopback(request.head.authority) else { throw Self.refusal }
        return try await next(request, context)
    }

    /// The problem a request with another `Host` gets.
    public static var refusal: Problem {
        Problem(status: .forbidden, type: "host-not-allowed", detail: "this server answers only requests addressed to 127.0.0.1, localhost or [::1]")
    }

    /// True for `127.0.0.1`, `localhost` and `[::1]`, each alone or with a port of digits (case-insensitive).
    public static func isLoopback(_ host: String?) -> Bool {
        guard let host = host?.lowercased() else { return false }
        for name in ["127.0.0.1", "localhost", "[::1]"] where host.hasPrefix(name) {
            let rest = host.dropFirst(name.count)
            if rest.isEmpty { return true }
            guard rest.first == ":" else { continue }
            let port = rest.dropFirst()
            return !port.isEmpty && port.count <= 5 && port.allSatisfy(\.isASCII) && port.allSatisfy(\.isNumber)
        }
        return false
    }
}
