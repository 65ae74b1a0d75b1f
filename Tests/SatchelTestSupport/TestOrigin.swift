import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import SatchelHTTP

/// A real HTTP origin on loopback serving a directory, with Range support and injectable faults.
public final class TestOrigin: @unchecked Sendable {
    /// Something the origin does wrong, once per matching request.
    public enum Fault: Sendable, Equatable {
        /// Answer with this status and a short body.
        case status(Int)
        /// Send this many bytes of the body, then close the connection.
        case reset(after: Int)
        /// Send this many bytes of the body, then stop sending (keeping the connection open).
        case truncate(after: Int)
        /// Send the body in 4 KB chunks with this many milliseconds between them.
        case slow(milliseconds: Int)
        /// Send the file with this Content-Type.
        case contentType(String)
        /// Send an HTML page (with the file's own Content-Type).
        case htmlPage
        /// Send these bytes instead of the file.
        case body([UInt8])
        /// Answer 206 with only this many bytes from where the request starts (Content-Range says so, and the
        /// file's whole length): a response that ends well-formed but short of the file.
        case shortRange(Int)
        /// Answer 302 with this Location.
        case redirect(String)
        /// Send a 200 whose body never ends (comment lines of a playlist, until the client goes away).
        case endless
        /// Serve these bytes instead of the file (a new version, with its own ETag) and answer a Range even when the
        /// request's If-Range names another version: a CDN that ignores If-Range.
        case changedIgnoringIfRange([UInt8])
    }

    /// One request the origin saw.
    public struct Request: Sendable {
        public var path: String
        public var range: String?
    }

    /// The directory served.
    public let root: URL
    /// `http://127.0.0.1:PORT`.
    public private(set) var baseURL = ""
    private let lock = NSLock()
    private var faults: [(suffix: String, fault: Fault, remaining: Int)] = []
    private var requests: [Request] = []
    private var throttle: (chunk: Int, microseconds: UInt32)?
    private var bodies = (active: 0, peak: 0)
    private var virtualFiles: [String: [UInt8]] = [:]
    private var requiredHeader: (name: String, value: String)?
    private var task: Task<Void, any Error>?

    private init(root: URL) {
        self.root = root
    }

    /// Starts an origin serving `root` on a free loopback port.
    public static func start(root: URL) async throws -> TestOrigin {
        let origin = TestOrigin(root: root)
        let router = Router()
        // Its endless body awaits nothing but writes: without turns, it would hold the event loop it is served on.
        router.add(middleware: LoopFairBodyMiddleware())
        router.get("**") { request, _ in try await origin.respond(request) }
        (origin.task, origin.baseURL) = await LoopbackServer.start(router, label: "test-origin")
        return origin
    }

    /// Stops the server.
    public func stop() {
        task?.cancel()
    }

    /// The URL of a path under the root.
    public func url(_ path: String) -> String { baseURL + "/" + path }

    /// Injects `fault` for the next `times` requests whose path ends with `suffix` (times < 0: for ever).
    public func inject(_ fault: Fault, on suffix: String, times: Int = 1) {
        lock.withLock { faults.append((suffix, fault, times)) }
    }

    /// Serves `bytes` for requests whose raw (still percent-encoded) path is `rawPath`, e.g. `/%252e%252e/x.ts`.
    public func serve(rawPath: String, bytes: [UInt8]) {
        lock.withLock { virtualFiles[rawPath] = bytes }
    }

    /// Answers 401 to every request that does not carry this header with this value (nil: no check).
    public func require(header name: String, value: String?) {
        lock.withLock { requiredHeader = value.map { (name, $0) } }
    }

    /// Removes every fault.
    public func clearFaults() {
        lock.withLock { faults = [] }
    }

    /// Sends every body slowly: `chunk` bytes, then a pause (nil = full speed).
    public func setThrottle(chunk: Int, microseconds: UInt32) {
        lock.withLock { throttle = (chunk, microseconds) }
    }

    /// Requests seen so far.
    public var log: [Request] { lock.withLock { requests } }

    /// The most response bodies that were being sent at once.
    public var peakConcurrentBodies: Int { lock.withLock { bodies.peak } }

    private func takeFault(for path: String) -> Fault? {
        lock.withLock {
            guard let index = faults.firstIndex(where: { path.hasSuffix($0.suffix) && $0.remaining != 0 }) else { return nil }
            faults[index].remaining -= 1
            return faults[index].fault
        }
    }

    private func respond(_ request: Hummingbird.Request) async throws -> Response {
        let path = String(request.uri.path.removingPercentEncoding?.dropFirst() ?? "")
        let rangeHeader = request.headers[.range]
        lock.withLock { requests.append(Request(path: path, range: rangeHeader)) }
        if let required = lock.withLock({ requiredHeader }),
           request.headers[values: HTTPField.Name(required.name) ?? .authorization].first != required.value {
            return Response(status: .unauthorized, body: .init(byteBuffer: ByteBuffer(string: "sign in\n")))
        }
        let fault = takeFault(for: path)
        if case let .status(code)? = fault {
            return Response(status: .init(code: code), body: .init(byteBuffer: ByteBuffer(string: "fault \(code)\n")))
        }
        if case let .redirect(location)? = fault {
            var headers = HTTPFields()
            headers[.location] = location
            return Response(status: .found, headers: headers)
        }
        if case .endless? = fault {
            var headers = HTTPFields()
            headers[.contentType] = "application/vnd.apple.mpegurl"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "#EXTM3U\n"))
                let chunk = ByteBuffer(string: String(repeating: "# and on\n", count: 7_000))
                while !Task.isCancelled { try await writer.write(chunk) }
                try await writer.finish(nil)
            })
        }
        let file = root.appendingPathComponent(path).standardized
        let virtual = lock.withLock { virtualFiles[request.uri.path] }
        let readable = file.path.hasPrefix(root.standardized.path) && !path.contains("..") && !file.hasDirectoryPath
        // Read and hashed on a thread of its own: a request is served on its connection's event loop, and a file may be
        // tens of MB (the FNV hash of 20 MB in a debug build held a loop for half a second).
        var found = virtual
        if found == nil, readable { found = try? await TestMedia.offloaded { try Array(Data(contentsOf: file)) } }  // blocking-ok: on its own thread
        guard var data = found else {
            return Response(status: .notFound, body: .init(byteBuffer: ByteBuffer(string: "not found\n")))
        }
        switch fault {
        case .htmlPage?: data = Array("<!DOCTYPE html><html><body>Sign in to the Wi-Fi</body></html>".utf8)
        case let .body(bytes)?, let .changedIgnoringIfRange(bytes)?: data = bytes
        default: break
        }
        var headers = HTTPFields()
        if case let .contentType(type)? = fault {
            headers[.contentType] = type
        } else {
            headers[.contentType] = Self.contentType(path)
        }
        headers[.acceptRanges] = "bytes"
        let etag = try await TestMedia.offloaded { [data] in Self.etag(data) }
        headers[.eTag] = etag
        var status = HTTPResponse.Status.ok
        var body = data[...]
        var unchanged = request.headers[.ifRange].map { $0 == etag } ?? true  // If-Range: ranges only of the same file
        if case .changedIgnoringIfRange? = fault { unchanged = true }
        if let rangeHeader, rangeHeader.hasPrefix("bytes="), unchanged {
            let bounds = rangeHeader.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
            let start = bounds.first.flatMap { Int($0) } ?? 0
            let end = bounds.count > 1 ? Int(bounds[1]) ?? (data.count - 1) : data.count - 1
            guard start < data.count else {
                headers[.contentRange] = "bytes */\(data.count)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
            body = data[start...min(end, data.count - 1)]
            headers[.contentRange] = "bytes \(start)-\(start + body.count - 1)/\(data.count)"
            status = .partialContent
        }
        if case let .shortRange(count)? = fault {
            let start = body.startIndex
            body = body.prefix(count)
            headers[.contentRange] = "bytes \(start)-\(start + body.count - 1)/\(data.count)"
            status = .partialContent
        }
        let bytes = Array(body)
        let throttle = lock.withLock { self.throttle }
        return Response(status: status, headers: headers, body: ResponseBody(contentLength: bytes.count) { [self] writer in
            lock.withLock {
                bodies.active += 1
                bodies.peak = max(bodies.peak, bodies.active)
            }
            defer { lock.withLock { bodies.active -= 1 } }
            var chunk = 64 * 1024, pause: UInt32 = 0
            if let throttle { (chunk, pause) = throttle }
            if case let .slow(milliseconds)? = fault { (chunk, pause) = (4096, UInt32(milliseconds * 1000)) }
            var limit = bytes.count
            if case let .reset(after)? = fault { limit = min(after, bytes.count) }
            if case let .truncate(after)? = fault { limit = min(after, bytes.count) }
            var offset = 0
            while offset < limit {
                let end = min(offset + chunk, limit)
                try await writer.write(ByteBuffer(bytes: bytes[offset..<end]))
                offset = end
                if pause > 0 { try await Task.sleep(nanoseconds: UInt64(pause) * 1000) }
            }
            if case .reset? = fault { throw CancellationError() }
            if case .truncate? = fault { try await Task.sleep(nanoseconds: 60_000_000_000) }
            try await writer.finish(nil)
        })
    }

    /// An entity tag of the bytes: their FNV-1a hash.
    static func etag(_ data: [UInt8]) -> String {
        "\"\(String(data.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }, radix: 16))\""
    }

    static func contentType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "m3u8": return "application/vnd.apple.mpegurl"
        case "ts": return "video/mp2t"
        case "mp4", "m4s", "m4v": return "video/mp4"
        case "m4a": return "audio/mp4"
        case "mpd": return "application/dash+xml"
        case "json": return "application/json"
        case "html": return "text/html"
        case "vtt": return "text/vtt"
        default: return path.hasSuffix("Manifest") ? "text/xml" : "application/octet-stream"
        }
    }
}
