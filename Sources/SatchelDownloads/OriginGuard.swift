import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix
import SatchelBytes

/// Requests under an ``OriginPolicy``: `any` goes through the fetcher's client as it is; `publicOnly` through a client
/// that follows no redirect by itself — each hop's host is resolved and checked before it is asked, at most five hops.
final class OriginGuard: Sendable {
    /// The client of `publicOnly` requests (redirects handed back, not followed).
    let client: HTTPClient
    /// Each host's verdict for a minute (nil: public), so a file of thousands of segments resolves its host once.
    private let verdicts = Locked<[String: (until: Date, refusal: String?)]>([:])
    static let maximumRedirects = 5

    init(configuration: HTTPClient.Configuration) {
        var configuration = configuration
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    /// `request` sent by `open` (`any`), or hop by hop, each host checked, through the guard's own client (`publicOnly`).
    func execute(_ request: HTTPClientRequest, origins: OriginPolicy, deadline: NIODeadline, open: HTTPClient) async throws -> HTTPClientResponse {
        guard origins == .publicOnly else { return try await open.execute(request, deadline: deadline) }
        var request = request
        for _ in 0...Self.maximumRedirects {
            guard let url = URL(string: request.url) else { throw DownloadFailure.invalidContent(url: request.url, reason: "not a URL") }
            try await check(url)
            let response = try await client.execute(request, deadline: deadline)
            guard [301, 302, 303, 307, 308].contains(response.status.code), let location = response.headers.first(name: "location") else { return response }
            _ = try? await response.body.collect(upTo: 64 << 10)
            guard let next = URL(string: location, relativeTo: url)?.absoluteURL else {
                throw DownloadFailure.invalidContent(url: request.url, reason: "the redirect's Location is not a URL")
            }
            request.url = next.absoluteString
            if response.status.code == 303 { request.method = .GET; request.body = nil }
        }
        throw DownloadFailure.invalidContent(url: request.url, reason: "more than \(Self.maximumRedirects) redirects")
    }

    /// Refuses `url` when its host is not public.
    func check(_ url: URL) async throws(DownloadFailure) {
        let host = (url.host ?? "").lowercased(), now = Date()
        let refusal: String?
        if let known = verdicts.withLock({ $0[host] }), known.until > now {
            refusal = known.refusal
        } else {
            refusal = await OriginAddress.refusal(url)
            verdicts.withLock { table in
                if table.count > 256 { table.removeAll() }
                table[host] = (now.addingTimeInterval(60), refusal)
            }
        }
        if let refusal { throw .privateOrigin(url: url.absoluteString, address: refusal) }
    }

    func shutdown() async {
        try? await client.shutdown()
    }
}
