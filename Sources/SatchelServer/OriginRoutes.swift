import HTTPTypes
import Hummingbird
import SatchelHTTP

/// `GET|HEAD|OPTIONS /content/{path}`: the packages of `satchel serve --origin DIR`, as a CDN serves them —
/// Content-Type by format, byte ranges (206, 416), `ETag` and `Last-Modified` with conditional requests (304),
/// and CORS so that players on other origins may read them. What ``OriginFiles`` does not publish is 404.
struct OriginRoutes: RouteGroup {
    let files: OriginFiles

    /// Headers every origin answer carries, errors included (a browser reads a 404 only with them).
    static let cors: HTTPFields = [
        .accessControlAllowOrigin: "*",
        .accessControlExposeHeaders: "Content-Length, Content-Range, Accept-Ranges, ETag, Last-Modified",
    ]

    func register(on router: Router<SatchelRequestContext>) {
        router.get("/content/**") { request, context in try await answer(request, context, head: false) }
        router.head("/content/**") { request, context in try await answer(request, context, head: true) }
        router.on("/content/**", method: .options) { _, _ in
            var headers = Self.cors
            headers[.accessControlAllowMethods] = "GET, HEAD, OPTIONS"
            headers[.accessControlAllowHeaders] = "Range, If-None-Match, If-Modified-Since, If-Range"
            headers[.accessControlMaxAge] = "86400"
            return Response(status: .noContent, headers: headers)
        }
    }

    private func answer(_ request: Request, _ context: SatchelRequestContext, head: Bool) async throws -> Response {
        do {
            // An encoded slash (`%2F`) separates as a slash does, as CDNs read it; each name is then checked alike.
            let components = context.parameters.getCatchAll()
                .flatMap { (String($0).removingPercentEncoding ?? "").split(separator: "/", omittingEmptySubsequences: false) }
                .map(String.init)
            let file = try files.file(components)
            var headers = Self.cors
            headers[.contentType] = ContentTypes.type(of: file.path)
            headers[.acceptRanges] = "bytes"
            headers[.eTag] = file.etag
            headers[.lastModified] = file.lastModified
            // Playlists and MPDs may change (a live package); segments never do.
            let manifest = ["m3u8", "mpd"].contains(file.path.split(separator: ".").last?.lowercased() ?? "")
            headers[.cacheControl] = manifest ? "no-cache" : "public, max-age=86400"
            if OriginConditions.notModified(file, ifNoneMatch: request.headers[.ifNoneMatch], ifModifiedSince: request.headers[.ifModifiedSince]) {
                return Response(status: .notModified, headers: headers)
            }
            let range = OriginConditions.rangeApplies(file, ifRange: request.headers[.ifRange])
                ? try ByteRangeRequest.resolve(request.headers[.range], size: file.size) : nil
            let served = range ?? (file.size > 0 ? 0...(file.size - 1) : nil)
            headers[.contentLength] = String(served.map { $0.upperBound - $0.lowerBound + 1 } ?? 0)
            if let range { headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(file.size)" }
            var body = ResponseBody()
            if !head, let served {
                let opened = file.opened, channel = context.channel
                body = ResponseBody(contentLength: Int(served.upperBound - served.lowerBound + 1)) { writer in
                    try await FileBody.write(opened, range: served, to: &writer, on: channel)
                    try await writer.finish(nil)
                }
            }
            return Response(status: range == nil ? .ok : .partialContent, headers: headers, body: body)
        } catch let refusal as RangeNotSatisfiable {
            var headers = Self.cors
            headers[.contentRange] = "bytes */\(refusal.size)"
            throw Problem(status: .rangeNotSatisfiable, type: refusal.code, detail: refusal.description, headers: headers)
        } catch {
            let problem = Problem(any: error)
            var headers = problem.headers
            for field in Self.cors { headers[field.name] = field.value }
            throw Problem(status: problem.status, type: problem.type, detail: problem.detail, headers: headers)
        }
    }
}
