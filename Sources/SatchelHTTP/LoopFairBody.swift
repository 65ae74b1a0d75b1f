import HTTPTypes
import Hummingbird
import NIOCore

/// A response body that gives its connection's event loop back now and then. A request is served on its connection's
/// loop (through a task executor preference), where a write to a writable channel completes without suspending: a
/// body whose producer awaits nothing else (bytes made in memory, an endless or very long stream) would hold the loop
/// for as long as it writes, and every other connection on that loop would wait. Worse, once its client has gone, the close is
/// news the loop can only deliver between tasks: the writes would go on failing quietly, never learning it, for ever.
///
/// So every ``bytesBetweenTurns`` bytes or ``writesBetweenTurns`` writes, whichever comes first, the writing task
/// yields: the loop reads its sockets and runs its other tasks, a closed connection's writer is finished, and the
/// body's next write throws. A body of a known length within ``bytesBetweenTurns`` (every answer made whole, such as
/// a license) is left as it is.
public struct LoopFairBodyMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Bytes written between two turns of the loop.
    public static var bytesBetweenTurns: Int { 256 << 10 }
    /// Writes (each a buffer, or a file region of any size) between two turns of the loop.
    public static var writesBetweenTurns: Int { 16 }

    /// The middleware.
    public init() {}

    /// Answers with `next`'s response, its body made fair to the loop when it may be long.
    public func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        if let length = response.body.contentLength, length <= Self.bytesBetweenTurns { return response }
        let body = response.body
        response.body = ResponseBody(contentLength: body.contentLength) { writer in
            try await body.write(LoopFairWriter(base: writer, bytesBetweenTurns: Self.bytesBetweenTurns, writesBetweenTurns: Self.writesBetweenTurns))
        }
        return response
    }
}

/// Passes writes on to `base`, yielding the task every so many bytes or writes.
struct LoopFairWriter: ResponseBodyWriter {
    var base: any ResponseBodyWriter
    let bytesBetweenTurns: Int
    let writesBetweenTurns: Int
    private var bytes = 0
    private var writes = 0

    init(base: any ResponseBodyWriter, bytesBetweenTurns: Int, writesBetweenTurns: Int) {
        (self.base, self.bytesBetweenTurns, self.writesBetweenTurns) = (base, bytesBetweenTurns, writesBetweenTurns)
    }

    mutating func write(_ buffer: ByteBuffer) async throws {
        try await base.write(buffer)
        bytes += buffer.readableBytes
        writes += 1
        guard bytes >= bytesBetweenTurns || writes >= writesBetweenTurns else { return }
        (bytes, writes) = (0, 0)
        await Task.yield()
    }

    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {
        try await base.finish(trailingHeaders)
    }
}
