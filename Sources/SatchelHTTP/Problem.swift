import Foundation
import HTTPTypes
import Hummingbird

/// An RFC 9457 problem document: a stable `type` URI, the status, its reason and a detail a user can act on.
public struct ProblemDocument: Codable, Sendable, Equatable {
    /// Where problem types live: `https://satchel.dev/problems/<slug>`.
    public static let typeBase = "https://satchel.dev/problems/"

    /// The problem type URI.
    public var type: String
    /// The status's reason phrase.
    public var title: String
    /// The HTTP status.
    public var status: Int
    /// What happened, never a secret.
    public var detail: String

    /// A problem with the slug `type` (e.g. `bad-request`).
    public init(status: Int, type: String, detail: String) {
        self.type = Self.typeBase + type
        self.title = Self.titles[status] ?? HTTPResponse.Status(code: status).reasonPhrase
        self.status = status
        self.detail = detail
    }

    private static let titles: [Int: String] = [
        400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        408: "Request Timeout", 413: "Content Too Large", 429: "Too Many Requests", 500: "Internal Server Error",
        501: "Not Implemented", 503: "Service Unavailable",
    ]

    /// The JSON body.
    public var json: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(self)).map(Array.init) ?? Array("{}".utf8)
    }

    /// The `application/problem+json` response; `headers` are added (e.g. `Allow`).
    public func response(headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/problem+json"
        return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }
}

/// The routes of an application, for answering a request that matches none: 405 with `Allow` when the path
/// exists with other methods, else 404 — both as problem+json.
public final class RouteTable: @unchecked Sendable {
    private let lock = NSLock()
    private var routes: [(path: RouterPath, method: HTTPRequest.Method)] = []

    /// An empty table; ``load(_:)`` fills it once the routes are registered.
    public init() {}

    /// Takes the router's routes.
    public func load<Context>(_ router: Router<Context>) {
        let list = router.routes.map { ($0.path, $0.method) }
        lock.withLock { routes = list }
    }

    /// The methods routed for `path` (HEAD with GET).
    public func methods(for path: String) -> [HTTPRequest.Method] {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        let table = lock.withLock { routes }
        var methods: [HTTPRequest.Method] = []
        for route in table where Self.matches(route.path, components) && !methods.contains(route.method) {
            methods.append(route.method)
            if route.method == .get, !methods.contains(.head) { methods.append(.head) }
        }
        return methods
    }

    private static func matches(_ path: RouterPath, _ components: [Substring]) -> Bool {
        let elements = path.components
        if elements.last == .recursiveWildcard { return components.count >= elements.count - 1 }
        guard elements.count == components.count else { return false }
        return zip(elements, components).allSatisfy { $0 ~= $1 }
    }
}

/// Turns the router's "no route" into problem+json: 404, or 405 with `Allow` when only the method is wrong.
/// Add it first, so it also wraps the router's not-found responder.
public struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    let table: RouteTable

    /// A middleware answering from `table`.
    public init(table: RouteTable) {
        self.table = table
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound && [nil, "NotFound"].contains(context.endpointPath) {
            let allowed = table.methods(for: request.uri.path)
            guard !allowed.isEmpty else {
                return ProblemDocument(status: 404, type: "not-found", detail: "no such endpoint").response()
            }
            var headers = HTTPFields()
            headers[.allow] = allowed.map(\.rawValue).joined(separator: ", ")
            return ProblemDocument(status: 405, type: "method-not-allowed",
                                   detail: "\(request.method.rawValue) is not allowed here; use \(headers[.allow] ?? "")").response(headers: headers)
        }
    }
}
