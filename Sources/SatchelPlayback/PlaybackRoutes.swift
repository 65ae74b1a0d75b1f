import HTTPTypes
import Hummingbird
import NIOCore
import SatchelHTTP
import SatchelStreams

/// `GET|HEAD /{session token}/{path in the asset}`: everything the proxy serves; `POST` only to a forwarded
/// key URI (pass-through mode's license forwarding).
struct PlaybackRoutes: RouteGroup {
    let proxy: PlaybackProxy

    func register(on router: Router<SatchelRequestContext>) {
        router.get("/{token}/**") { request, context in try await answer(request, context, head: false) }
        router.head("/{token}/**") { request, context in try await answer(request, context, head: true) }
        router.post("/{token}/**") { request, context in try await answer(request, context, head: false) }
    }

    private func answer(_ request: Request, _ context: SatchelRequestContext, head: Bool) async throws -> Response {
        guard let token = context.parameters.get("token") else { throw PlaybackError.notFound }
        let components = context.parameters.getCatchAll().map { String($0).removingPercentEncoding ?? String($0) }
        let path = components.joined(separator: "/")
        var posted: [UInt8]?
        if request.method == .post {
            // Only a forwarded key or license request has a body (the proxy refuses it for any other path).
            guard path.hasPrefix(KeyForwarding.prefix) else { throw PlaybackError.notFound }
            posted = Array(try await request.body.collect(upTo: Int(KeyForwarding.maximumAnswer)).readableBytesView)
        }
        let timing = RequestTiming()
        let (served, streamed) = try await RequestTiming.$current.withValue(timing) {
            try await proxy.respond(token: token, path: path, range: request.headers[.range], body: posted,
                                    contentType: request.headers[.contentType], head: head)
        }
        var headers = HTTPFields()
        headers[.contentType] = served.contentType
        headers[.acceptRanges] = "bytes"
        headers[.cacheControl] = "no-store"
        if let range = served.range, let size = served.size {
            headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
        }
        let channel = context.channel
        let (logger, logged) = (proxy.logger, PlaybackProxy.encodedPath(path))
        let write: @Sendable (inout any ResponseBodyWriter) async throws -> Void = { writer in
            try await RequestTiming.$current.withValue(timing) { try await streamed?.write(to: &writer, on: channel) }
            try await writer.finish(nil)
            // Each request's cost (seed 000 §5.7): the origin's time and throughput, the decryption's; never the session token.
            logger.debug("served", metadata: timing.metadata().merging([
                "path": "\(logged)", "bytes": "\(served.length.map(String.init) ?? "chunked")", "transform": "\(streamed?.transform.rawValue ?? "none")",
            ]) { $1 })
        }
        let body: ResponseBody
        if let length = served.length {
            headers[.contentLength] = String(length)
            body = head ? ResponseBody() : ResponseBody(contentLength: Int(length), write)
        } else {
            // Chunked: the length is known only at the end. A HEAD says so too, never a length of 0.
            body = head ? ResponseBody { writer in try await writer.finish(nil) } : ResponseBody(write)
        }
        return Response(status: served.range == nil ? .ok : .partialContent, headers: headers, body: body)
    }
}
