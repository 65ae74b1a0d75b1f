import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SatchelBytes

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
        (try? JSONCoding.encoder().encode(self)).map(Array.init) ?? Array("{}".utf8)
    }

    /// The `application/problem+json` response; `headers` are added (e.g. `Allow`).
    public func response(headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/problem+json"
        return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }
}

/// A problem as Hummingbird's `HTTPResponseError`: throw it (or any ``ProblemConvertible`` error, which
/// ``ProblemMiddleware`` turns into one) from a route and the client gets `application/problem+json`.
public struct Problem: HTTPResponseError, Sendable {
    /// The HTTP status.
    public let status: HTTPResponse.Status
    /// The problem type slug.
    public let type: String
    /// What happened, never a secret.
    public let detail: String
    /// Extra response headers (`Allow`, `Retry-After`).
    public let headers: HTTPFields

    /// A problem with the slug `type`.
    public init(status: HTTPResponse.Status, type: String, detail: String, headers: HTTPFields = [:]) {
        self.status = status
        self.type = type
        self.detail = detail
        self.headers = headers
    }

    /// The problem for a module's error: its type, status and safe detail.
    public init(_ error: some ProblemConvertible) {
        self.init(status: .init(code: error.httpStatus), type: error.problemType, detail: error.problemDetail)
    }

    /// The problem for any error: a ``Problem`` as it is, a ``ProblemConvertible`` error by its own
    /// description, Hummingbird's `HTTPError` by its status, a body past its limit as 413; anything else is a 500
    /// that says nothing more.
    public init(any error: any Error) {
        switch error {
        case let problem as Problem: self = problem
        case let error as any ProblemConvertible: self.init(error)
        case let error as HTTPError:
            self.init(status: error.status, type: Self.slug(error.status),
                      detail: error.body ?? error.status.reasonPhrase, headers: error.headers)
        case is NIOTooManyBytesError:
            // A body read with a limit (a form, a JSON body) that went past it.
            self.init(status: .contentTooLarge, type: Self.slug(.contentTooLarge), detail: "the request body is larger than this endpoint takes")
        default: self.init(status: .internalServerError, type: "internal", detail: "internal error")
        }
    }

    /// The document sent.
    public var document: ProblemDocument { ProblemDocument(status: status.code, type: type, detail: detail) }

    /// The `application/problem+json` response.
    public var response: Response { document.response(headers: headers) }

    public func response(from request: Request, context: some RequestContext) throws -> Response { response }

    /// A slug for a bare status (`not-found`, `too-large`).
    static func slug(_ status: HTTPResponse.Status) -> String {
        switch status.code {
        case 400: return "bad-request"
        case 401: return "unauthorized"
        case 403: return "forbidden"
        case 404: return "not-found"
        case 405: return "method-not-allowed"
        case 413: return "too-large"
        case 500: return "internal"
        default: return "http-\(status.code)"
        }
    }
}
