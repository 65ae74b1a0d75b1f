import HTTPTypes
import Hummingbird
import NIOCore

/// Refuses request bodies larger than `limit` bytes with 413 problem+json: at once when `Content-Length`
/// says so, and as soon as a chunked body crosses the limit otherwise.
public struct BodyLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let limit: Int

    /// A middleware allowing bodies of at most `limit` bytes.
    public init(limit: Int) {
        self.limit = max(limit, 0)
    }

    /// The problem sent for a body over `limit`.
    public static func tooLarge(_ limit: Int) -> Problem {
        Problem(status: .contentTooLarge, type: "too-large", detail: "request bodies are limited to \(Self.describe(limit))")
    }

    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let declared = request.headers[.contentLength].flatMap(Int.init) {
            guard declared <= limit else { throw Self.tooLarge(limit) }
            return try await next(request, context)
        }
        var request = request
        request.body = RequestBody(asyncSequence: LimitedBody(base: request.body, limit: limit))
        return try await next(request, context)
    }

    static func describe(_ bytes: Int) -> String {
        bytes >= 1 << 20 && bytes % (1 << 20) == 0 ? "\(bytes >> 20) MiB" : bytes >= 1024 && bytes % 1024 == 0 ? "\(bytes >> 10) KiB" : "\(bytes) bytes"
    }
}

/// A body that throws the 413 problem once more than `limit` bytes have passed.
struct LimitedBody: AsyncSequence, Sendable {
    typealias Element = ByteBuffer
    let base: RequestBody
    let limit: Int

    struct AsyncIterator: AsyncIteratorProtocol {
        var base: RequestBody.AsyncIterator
        let limit: Int
        var seen = 0

        mutating func next() async throws -> ByteBuffer? {
            guard let buffer = try await base.next() else { return nil }
            seen += buffer.readableBytes
            if seen > limit { throw BodyLimitMiddleware<BasicRequestContext>.tooLarge(limit) }
            return buffer
        }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), limit: limit) }
}
