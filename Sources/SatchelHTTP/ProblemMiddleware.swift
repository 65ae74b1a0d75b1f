import HTTPTypes
import Hummingbird
import Logging
import SatchelBytes

/// Turns every error a route throws into problem+json: the router's "no route" into 404, or 405 with
/// `Allow` when only the method is wrong; a ``ProblemConvertible`` error into its own status and type; any
/// other error into a 500 that says nothing more (and is logged, without the request's query string).
/// Add it first, so it also wraps the router's not-found responder and every other middleware.
public struct ProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    let table: RouteTable
    /// The path as it may be logged (a session token in a path is a secret).
    let redact: @Sendable (String) -> String

    /// A middleware answering unrouted requests from `table`; failures are logged with `redact(path)`.
    public init(table: RouteTable, redact: @escaping @Sendable (String) -> String = { $0 }) {
        self.table = table
        self.redact = redact
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
        } catch {
            let problem = Problem(any: error)
            if problem.status.code >= 500, !(error is Problem) {
                context.logger.error("request failed", metadata: ["path": .string(redact(request.uri.path)), "problem": .string(problem.type),
                                                                  "error": .string(String(describing: type(of: error)))])
            }
            return problem.response
        }
    }
}
