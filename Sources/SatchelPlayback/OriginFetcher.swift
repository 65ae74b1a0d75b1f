import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import SatchelBytes
import SatchelSystem

/// Fetches the files of an asset that are not on disk from its origin, for the player that is waiting: short
/// timeouts (a player waits seconds, not minutes), no retries (the player asks again), no decompression.
final class OriginFetcher: Sendable {
    /// The HTTP client, made at the first request (a proxy over a complete download never needs one); nil
    /// again once shut down.
    private let state = Locked<(client: HTTPClient?, shutDown: Bool)>((nil, false))
    private let configuration: HTTPClient.Configuration
    /// The longest a request may take to be answered.
    private let deadline: TimeAmount
    /// The slowest an origin may send a file.
    let slowest: OriginPace

    /// An answer whose status was a success, its body still to read.
    struct Answer: Sendable {
        /// The announced length of the body (Content-Length), when given.
        var length: Int64?
        /// The body as it arrives.
        var body: HTTPClientResponse.Body
        /// The whole file's size a ranged answer gives (`Content-Range: bytes A-B/TOTAL`).
        var total: Int64?
    }

    init(connectTimeout: Duration = .seconds(3), readTimeout: Duration = .seconds(10), deadline: Duration = .seconds(30),
         slowest: OriginPace = OriginPace()) {
        self.slowest = slowest
        self.deadline = TimeAmount(deadline)
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .init(connectTimeout), read: .init(readTimeout)))
        configuration.decompression = .disabled
        configuration.redirectConfiguration = .follow(max: 5, allowCycles: false)
        self.configuration = configuration
    }

    /// The client, made on first use; nil after ``shutdown()``.
    private var client: HTTPClient? {
        state.withLock { state in
            guard !state.shutDown else { return nil }
            if let client = state.client { return client }
            let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            state.client = client
            return client
        }
    }

    /// Closes the client's connections; later requests fail as unreachable.
    func shutdown() async {
        let client = state.withLock { state -> HTTPClient? in
            defer { state = (nil, true) }
            return state.client
        }
        try? await client?.shutdown()
    }

    /// A fetcher dropped without ``shutdown()`` closes its client here (the callback keeps it alive until then).
    deinit {
        guard let client = state.withLock({ $0.client }) else { return }
        client.shutdown(queue: .global()) { _ in withExtendedLifetime(client) {} }
    }

    /// Opens `file` on the origin: 200 (or 206 for a ranged file) with its body; anything else is
    /// ``PlaybackError/originStatus(_:)`` (the origin's own status, for the player) or, when nothing answered,
    /// ``PlaybackError/originUnreachable(_:)``.
    func open(_ file: OriginFile, headers: [String: String]) async throws(PlaybackError) -> Answer {
        try await RequestTiming.timed(.origin) { () async throws(PlaybackError) -> Answer in try await opening(file, headers: headers) }
    }

    private func opening(_ file: OriginFile, headers: [String: String]) async throws(PlaybackError) -> Answer {
        var request = HTTPClientRequest(url: file.url)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { request.headers.add(name: name, value: value) }
        if let range = file.range { request.headers.replaceOrAdd(name: "Range", value: "bytes=\(range.lowerBound)-\(range.upperBound)") }
        let expected: UInt = file.range == nil ? 200 : 206
        let response = try await send(request) { $0 == expected }
        let total = response.headers.first(name: "content-range").flatMap { $0.split(separator: "/").last }.flatMap { Int64($0) }
        return Answer(length: response.headers.first(name: "content-length").flatMap { Int64($0) }, body: response.body, total: total)
    }

    /// A request answered whole: the server's content type and body.
    struct Exchange: Sendable {
        var contentType: String?
        var body: [UInt8]
    }

    /// Sends a GET (or, with `body`, a POST) to `url` with `headers`; answers a 2xx whole (at most `limit`
    /// bytes), else ``PlaybackError/originStatus(_:)``.
    func exchange(_ url: String, body: [UInt8]?, headers: [(name: String, value: String)], limit: Int64) async throws(PlaybackError) -> Exchange {
        var request = HTTPClientRequest(url: url)
        if let body {
            request.method = .POST
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        for header in headers { request.headers.replaceOrAdd(name: header.name, value: header.value) }
        let response = try await send(request) { (200...299).contains($0) }
        let answer = Answer(length: response.headers.first(name: "content-length").flatMap { Int64($0) }, body: response.body)
        return Exchange(contentType: response.headers.first(name: "content-type"), body: try await collect(answer, limit: limit))
    }

    /// Sends `request`; a status `accepted` refuses is the server's error (4xx, 5xx) or, otherwise, an origin that
    /// did not answer as it should; nothing answering is ``PlaybackError/originUnreachable(_:)``.
    private func send(_ request: HTTPClientRequest, accepted: (UInt) -> Bool) async throws(PlaybackError) -> HTTPClientResponse {
        guard let client else { throw .originUnreachable("the playback proxy is stopping") }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: .now() + deadline)
        } catch {
            throw .originUnreachable(Self.reason(error))
        }
        guard accepted(response.status.code) else {
            throw response.status.code >= 400 ? .originStatus(Int(response.status.code))
                : .originUnreachable("the server answered \(response.status.code)")
        }
        return response
    }

    /// The whole body of `file`, at most `limit` bytes; a body shorter or longer than announced is refused.
    func fetch(_ file: OriginFile, headers: [String: String], limit: Int64) async throws(PlaybackError) -> [UInt8] {
        try await collect(try await open(file, headers: headers), limit: limit)
    }

    /// The whole body of an answer, at most `limit` bytes; a body shorter or longer than announced is refused, and so
    /// is one that comes slower than ``slowest``.
    func collect(_ answer: Answer, limit: Int64) async throws(PlaybackError) -> [UInt8] {
        try await RequestTiming.timed(.origin, bytes: \.count) { () async throws(PlaybackError) -> [UInt8] in try await collecting(answer, limit: limit) }
    }

    private func collecting(_ answer: Answer, limit: Int64) async throws(PlaybackError) -> [UInt8] {
        if let length = answer.length, length > limit { throw .invalidContent("the origin's file is larger than \(limit >> 20) MB") }
        var bytes: [UInt8] = []
        if let length = answer.length { bytes.reserveCapacity(Int(length)) }
        var pace = slowest.pace(for: answer.length, limit: limit)
        do {
            for try await buffer in answer.body {
                bytes += buffer.readableBytesView
                guard bytes.count <= limit else { throw PlaybackError.invalidContent("the origin's file is larger than \(limit >> 20) MB") }
                if pace.count(buffer.readableBytes) != nil { throw PlaybackError.originUnreachable("the origin is too slow") }
            }
        } catch let error as PlaybackError {
            throw error
        } catch {
            throw .originUnreachable(Self.reason(error))
        }
        if let length = answer.length, Int64(bytes.count) != length {
            throw .originUnreachable("the origin sent \(bytes.count) of \(length) bytes")
        }
        return bytes
    }

    /// What went wrong, in words that carry no URL (a query may hold a token).
    static func reason(_ error: any Error) -> String {
        if let client = error as? HTTPClientError {
            if client == .readTimeout || client == .connectTimeout || client == .deadlineExceeded { return "the origin timed out" }
            if client == .remoteConnectionClosed { return "the origin closed the connection" }
            return "the origin failed (\(client.shortDescription))"
        }
        return String(describing: error).contains("refused") ? "the origin refused the connection" : "the origin cannot be reached"
    }
}

/// The slowest an origin may send a file a player waits for: below `bytesPerSecond` on average over `period` (the
/// download engine's floor by default: 1 KiB/s over 30 s), or longer than `deadline` plus a second per MiB of the
/// file (announced, or allowed when none is) for the whole of it, the transfer is cut and the player told (a
/// trickling origin must not hold a player, or the proxy, for ever).
public struct OriginPace: Sendable, Equatable {
    /// The slowest average accepted over one window, bytes per second.
    public var bytesPerSecond: Int
    /// The window.
    public var period: Duration
    /// The most a file may take, beside a second per MiB.
    public var deadline: Duration

    /// A pace; by default 1 KiB/s over 30 s, and a minute plus a second per MiB.
    public init(bytesPerSecond: Int = 1024, period: Duration = .seconds(30), deadline: Duration = .seconds(60)) {
        self.bytesPerSecond = bytesPerSecond
        self.period = period
        self.deadline = deadline
    }

    /// The pace of one file of `length` bytes (nil: unknown, at most `limit`).
    func pace(for length: Int64?, limit: Int64 = PlaybackProxy.maximumFile) -> TransferPace {
        TransferPace(bytesPerSecond: bytesPerSecond, period: period, deadline: deadline + .seconds(max(length ?? limit, 0) / (1 << 20)))
    }
}
