import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

/// A real HTTP reverse proxy on loopback that records every request (method, path, headers, body) and
/// forwards it to an upstream server: a test sees exactly what a client sent and still gets real answers.
public final class RecordingProxy: @unchecked Sendable {
    /// One request as it arrived.
    public struct Request: Sendable {
        public var method: String
        public var path: String
        public var headers: [String: String]
        public var body: [UInt8]

        /// A header's value (names are case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }

        /// The body parsed as a JSON object (nil when it is not one).
        public var json: [String: Any]? {
            (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        }
    }

    /// An answer on its way back to the client: what `rewrite` may change.
    public struct Answer: Sendable {
        public var status: Int
        /// The upstream's headers, but those of the connection and the length.
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        /// A header's value (names are case-insensitive).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// `http://127.0.0.1:PORT`.
    public private(set) var baseURL = ""
    /// Changes answers on the way (a hostile hop); nil passes them as they are.
    public var rewrite: (@Sendable (Request, inout Answer) -> Void)? {
        get { lock.withLock { rewriter } }
        set { lock.withLock { rewriter = newValue } }
    }
    private var rewriter: (@Sendable (Request, inout Answer) -> Void)?
    private let upstream: String
    private let lock = NSLock()
    private var seen: [Request] = []
    private var task: Task<Void, any Error>?

    private init(upstream: String) {
        self.upstream = upstream
    }

    /// Starts a proxy to `upstream` (`http://host:port`) on a free loopback port.
    public static func start(upstream: String) async throws -> RecordingProxy {
        let proxy = RecordingProxy(upstream: upstream)
        let router = Router()
        router.on("**", method: .get) { request, _ in try await proxy.forward(request) }
        router.on("**", method: .post) { request, _ in try await proxy.forward(request) }
        (proxy.task, proxy.baseURL) = await LoopbackServer.start(router, label: "recording-proxy")
        return proxy
    }

    /// Stops the proxy.
    public func stop() {
        task?.cancel()
    }

    /// Requests seen so far, oldest first.
    public var requests: [Request] { lock.withLock { seen } }

    private func forward(_ request: Hummingbird.Request) async throws -> Response {
        let body = Array(try await request.body.collect(upTo: 4 << 20).readableBytesView)
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.rawName] = field.value }
        let path = request.uri.description
        let seenRequest = Request(method: request.method.rawValue, path: path, headers: headers, body: body)
        lock.withLock { seen.append(seenRequest) }
        var outgoing = HTTPClientRequest(url: upstream + path)
        outgoing.method = .init(rawValue: request.method.rawValue)
        for field in request.headers where ![HTTPField.Name.contentLength, .connection].contains(field.name) && field.name.canonicalName != "host" {
            outgoing.headers.add(name: field.name.rawName, value: field.value)
        }
        if !body.isEmpty { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let answer = try await HTTPClient.shared.execute(outgoing, timeout: .seconds(30))
        let bytes = try await answer.body.collect(upTo: 4 << 20)
        let hopByHop: Set<String> = ["connection", "content-length", "transfer-encoding", "keep-alive"]
        var passed = Answer(status: Int(answer.status.code), headers: answer.headers.filter { !hopByHop.contains($0.name.lowercased()) }.map { ($0.name, $0.value) },
                            body: Array(bytes.readableBytesView))
        rewrite?(seenRequest, &passed)
        var fields = HTTPFields()
        for (name, value) in passed.headers {
            if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
        }
        return Response(status: .init(code: passed.status), headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: passed.body)))
    }
}
