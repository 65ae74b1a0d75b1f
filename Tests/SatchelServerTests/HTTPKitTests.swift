import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Prometheus
import SatchelBytes
import SatchelHTTP
import SatchelLicensing
import SatchelSystem
import ServiceLifecycle
import SatchelTestSupport
import Testing

/// The HTTP kit every Satchel server is built from: errors as problem+json without a central table, the
/// identity context, the body limit, request logs without query strings, request metrics by route pattern,
/// and a resource closed inside ServiceLifecycle.
@Suite("HTTP kit: problems, identity, body limit, logging, metrics, lifecycle")
struct HTTPKitTests {
    /// A module's error the kit has never heard of: it adopts the problem protocol in its own module.
    enum GadgetError: ProblemConvertible {
        case jammed
        var code: String { "gadget-jammed" }
        var httpStatus: Int { 409 }
        var description: String { "the gadget is jammed" }
    }

    struct Opaque: Error {
        let secret = "do-not-leak"
    }

    struct Demo: RouteGroup {
        func register(on router: Router<SatchelRequestContext>) {
            router.get("/gadget") { _, _ -> String in throw GadgetError.jammed }
            router.get("/asset") { _, _ -> String in throw LicensingError.unknownAsset("movie-9") }
            router.get("/opaque") { _, _ -> String in throw Opaque() }
            router.get("/items/{id}") { _, context in context.parameters.get("id") ?? "" }
            router.post("/upload") { request, _ in
                let body = try await request.body.collect(upTo: .max)
                return "\(body.readableBytes)"
            }
            router.get("/me") { _, context in
                let identity = try context.requireIdentity()
                return "\(identity.subject) on \(identity.device ?? "-")"
            }
        }
    }

    static func builder(logger: Logger = Logger(label: "test"), metrics: PrometheusCollectorRegistry = PrometheusCollectorRegistry())
        -> ApplicationBuilder {
        var builder = ApplicationBuilder(port: 0, maximumBody: 64, metrics: PrometheusMetricsFactory(registry: metrics), logger: logger)
        builder.add(Demo())
        return builder
    }

    static func problem(_ response: TestResponse) throws -> ProblemDocument {
        #expect(response.headers[.contentType] == "application/problem+json")
        return try JSONDecoder().decode(ProblemDocument.self, from: Data(buffer: response.body))
    }

    @Test("byte ranges: none, open-ended, closed (clamped), suffix; past the end and an empty suffix are unsatisfiable; other forms serve the whole file")
    func ranges() throws {
        #expect(try ByteRangeRequest.resolve(nil, size: 100) == nil)
        #expect(try ByteRangeRequest.resolve("bytes=10-", size: 100) == 10...99)
        #expect(try ByteRangeRequest.resolve("bytes=10-19", size: 100) == 10...19)
        #expect(try ByteRangeRequest.resolve("bytes=90-200", size: 100) == 90...99)
        #expect(try ByteRangeRequest.resolve("bytes=-30", size: 100) == 70...99)
        #expect(try ByteRangeRequest.resolve("bytes=-300", size: 100) == 0...99)
        for whole in ["bytes=0-1,5-6", "items=0-1", "bytes=5-2", "bytes=x-", "bytes=1"] {
            #expect(try ByteRangeRequest.resolve(whole, size: 100) == nil, "\(whole)")
        }
        for refused in ["bytes=100-", "bytes=-0", "bytes=0-"] {
            #expect(throws: RangeNotSatisfiable(size: refused == "bytes=0-" ? 0 : 100), "\(refused)") { try ByteRangeRequest.resolve(refused, size: refused == "bytes=0-" ? 0 : 100) }
        }
    }

    @Test("every module's error answers with its own status and type; an unknown error is a 500 that says nothing")
    func problems() async throws {
        let app = Application(router: Self.builder().router().0)
        try await app.test(.router) { client in
            do {
                let response = try await client.execute(uri: "/gadget", method: .get)
                #expect(response.status == .conflict)
                let problem = try Self.problem(response)
                #expect(problem.type == ProblemDocument.typeBase + "gadget-jammed" && problem.detail == "the gadget is jammed")
            }
            do {
                let response = try await client.execute(uri: "/asset", method: .get)
                #expect(response.status == .notFound)
                #expect(try Self.problem(response).type == ProblemDocument.typeBase + "unknown-asset")
            }
            do {
                let response = try await client.execute(uri: "/opaque", method: .get)
                #expect(response.status == .internalServerError)
                let problem = try Self.problem(response)
                #expect(problem.type == ProblemDocument.typeBase + "internal" && !String(buffer: response.body).contains("do-not-leak"))
            }
        }
    }

    @Test("bodies over the limit get 413 problem+json, declared or chunked; bodies within it pass")
    func bodyLimit() async throws {
        let app = Application(router: Self.builder().router().0)
        try await app.test(.router) { client in
            do {
                let response = try await client.execute(uri: "/upload", method: .post, body: ByteBuffer(repeating: 1, count: 64))
                #expect(response.status == .ok && String(buffer: response.body) == "64")
            }
            do {
                let response = try await client.execute(uri: "/upload", method: .post, body: ByteBuffer(repeating: 1, count: 65))
                #expect(response.status == .contentTooLarge)
                #expect(try Self.problem(response).detail == "request bodies are limited to 64 bytes")
            }
        }
        // Chunked: no Content-Length, so the limit is enforced while the body streams (a raw socket, so nothing adds one).
        try await Self.builder().build().test(.live) { client in
            let port = try #require(client.port)
            try await TestMedia.offloaded {
                let connection = try RawConnection(port: port, timeout: 10)
                let chunk = String(repeating: "x", count: 20)
                connection.send("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                + String(repeating: "14\r\n\(chunk)\r\n", count: 5) + "0\r\n\r\n")
                let answer = connection.readResponse()
                #expect(answer.hasPrefix("HTTP/1.1 413") && answer.contains("application/problem+json"), "\(answer)")
                let small = try RawConnection(port: port, timeout: 10)
                small.send("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n14\r\n\(chunk)\r\n0\r\n\r\n")
                #expect(small.readResponse().hasPrefix("HTTP/1.1 200"))
            }
        }
    }

    @Test("the bearer token becomes the context's identity; without one a route that needs it says 401; a bad one is refused")
    func identity() async throws {
        let router = Router(context: SatchelRequestContext.self)
        router.add(middleware: ProblemMiddleware(table: RouteTable()))
        router.add(middleware: AuthenticationMiddleware { token in
            guard token == "good" else { throw LicensingError.invalidEntitlement("unknown token") }
            return Identity(subject: "ada", device: "phone-1")
        })
        Demo().register(on: router)
        try await Application(router: router).test(.router) { client in
            do {
                let response = try await client.execute(uri: "/me", method: .get, headers: [.authorization: "Bearer good"])
                #expect(String(buffer: response.body) == "ada on phone-1")
            }
            do {
                let response = try await client.execute(uri: "/me", method: .get)
                #expect(response.status == .unauthorized)
                #expect(try Self.problem(response).type == ProblemDocument.typeBase + "missing-credential")
            }
            do {
                let response = try await client.execute(uri: "/me", method: .get, headers: [.authorization: "Bearer forged"])
                #expect(response.status == .unauthorized)
                #expect(try Self.problem(response).type == ProblemDocument.typeBase + "invalid-entitlement")
            }
        }
    }

    @Test("request logs carry method, path, status and problem, never the query string or headers")
    func logging() async throws {
        let lines = Locked<[String]>([])
        var logger = Logger(label: "kit") { _ in CapturingHandler(lines: lines) }
        logger.logLevel = .debug
        let app = Application(router: Self.builder(logger: logger).router().0)
        try await app.test(.router) { client in
            _ = try await client.execute(uri: "/items/7?token=SECRET-QUERY", method: .get, headers: [.authorization: "Bearer SECRET-HEADER"])
            _ = try await client.execute(uri: "/asset?key=SECRET-2", method: .get)
        }
        let text = lines.current.joined(separator: "\n")
        #expect(text.contains("path=/items/7") && text.contains("status=200"))
        #expect(text.contains("problem=unknown-asset") && text.contains("status=404"))
        #expect(!text.contains("SECRET"), "\(text)")
    }

    @Test("request metrics are counted per route pattern and status class, so a client cannot grow the label set")
    func metrics() async throws {
        let registry = PrometheusCollectorRegistry()
        let app = Application(router: Self.builder(metrics: registry).router().0)
        try await app.test(.router) { client in
            for id in 0..<3 { _ = try await client.execute(uri: "/items/\(id)", method: .get) }
            _ = try await client.execute(uri: "/nowhere/\(UUID())", method: .get)
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        let text = String(decoding: buffer, as: UTF8.self)
        #expect(text.contains(#"satchel_http_requests_total{route="/items/{id}",method="GET",status="2xx"} 3"#), "\(text)")
        #expect(text.contains(#"route="unrouted""#) && !text.contains("/nowhere"))
        #expect(text.contains("satchel_http_request_duration_seconds"))
    }

    @Test("a lifecycle service closes its resource when the service group shuts down gracefully")
    func lifecycle() async throws {
        let closed = Locked(false)
        let service = LifecycleService(name: "database") { closed.withLock { $0 = true } }
        let group = ServiceGroup(configuration: .init(services: [.init(service: service)], logger: Logger(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await Task.sleep(for: .milliseconds(100))
            #expect(!closed.current, "open while the server runs")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(closed.current)
    }
}
