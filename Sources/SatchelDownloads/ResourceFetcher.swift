import AsyncHTTPClient
import CSatchelSystem
import Foundation
import SatchelStreams
import NIOCore
import NIOHTTP1
import NIOPosix
import SatchelBytes
import SatchelSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Fetches manifests and files over HTTP (keep-alive, HTTP/2 where offered). Files are written to
/// `<path>.part`, resumed with HTTP Range, checked, and renamed into place only when complete.
public final class ResourceFetcher: ResourceFetching {
    let client: HTTPClient
    /// The requests of assets fetched from public addresses only.
    let guarded: OriginGuard
    /// A body slower than this is a retryable network failure.
    let lowSpeed: LowSpeedLimit
    private let isShutDown = Locked(false)

    /// A fetcher with its own HTTP client: `connectTimeout` and `readTimeout` per connection, `parallelism`
    /// connections per host, no transparent decompression (files are stored as the origin sends them).
    public init(connectTimeout: Duration = .seconds(10), readTimeout: Duration = .seconds(30), parallelism: Int = 8,
                lowSpeed: LowSpeedLimit = LowSpeedLimit()) {
        var http = HTTPClient.Configuration(timeout: .init(connect: .init(connectTimeout), read: .init(readTimeout)))
        http.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(parallelism, 1))
        http.decompression = .disabled
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: http)
        guarded = OriginGuard(configuration: http)
        self.lowSpeed = lowSpeed
    }

    /// Closes the client's connections.
    public func shutdown() async {
        guard isShutDown.withLock({ done in defer { done = true }; return !done }) else { return }
        do { try await client.shutdown() } catch {
            // Shutting down twice is the only failure, and the flag above rules it out.
        }
        await guarded.shutdown()
    }

    /// A fetcher dropped without ``shutdown()`` closes its client here; the callback keeps the client alive
    /// until it has.
    deinit {
        guard !isShutDown.current else { return }
        for client in [client, guarded.client] {
            client.shutdown(queue: .global()) { _ in withExtendedLifetime(client) {} }
        }
    }
    /// Manifests larger than this are refused.
    static let maxManifestBytes = 32 << 20

    // MARK: Manifests

    /// Fetches the asset's URL far enough to know what it is: manifests are read whole, media is not.
    public func probe(_ url: URL, headers: [String: String], origins: OriginPolicy) async throws(DownloadFailure) -> DownloadPlanner.Probe {
        // Only the head is asked for: a media file's first bytes say what it is, and a large file is not sent whole to
        // be dropped (a server that ignores ranges is read only until that is clear). A manifest longer than the head
        // is then fetched whole.
        var ranged = headers
        if !headers.keys.contains(where: { $0.lowercased() == "range" }) { ranged["Range"] = "bytes=0-\(Self.probeLength - 1)" }
        let (probe, cut) = try await request(url, headers: ranged, origins: origins, accepting: [200, 206]) {
            (response) throws(DownloadFailure) -> (DownloadPlanner.Probe, Bool) in
            let contentType = response.headers.first(name: "content-type")
            let partial = response.status.code == 206
            let length = partial ? response.headers.first(name: "content-range").flatMap { $0.split(separator: "/").last }.flatMap { Int($0) }
                : response.headers.first(name: "content-length").flatMap { Int($0) }
            var textual = contentType.map(ManifestSniffing.isTextType) ?? false
            var decided = textual
            let body = try await Self.read(response, url: url) { body in
                if !decided, body.count >= 64 {
                    textual = ManifestSniffing.looksLikeText(body)
                    decided = true
                }
                return decided && !textual
            }
            if !decided { textual = ManifestSniffing.looksLikeText(body) }
            let finalURL = response.url ?? url
            let probe = DownloadPlanner.Probe(url: finalURL, contentType: contentType, contentLength: length,
                                              text: textual ? String(decoding: body, as: UTF8.self) : nil)
            return (probe, partial && textual && body.count < (length ?? Int.max))
        }
        guard cut else { return probe }
        var whole = probe
        whole.text = try await text(probe.url, headers: headers, origins: origins)
        return whole
    }

    /// The bytes a probe asks for: enough to tell a manifest from media, and to hold most manifests whole.
    static let probeLength = 64 << 10

    /// Fetches a manifest's text.
    public func text(_ url: URL, headers: [String: String], origins: OriginPolicy) async throws(DownloadFailure) -> String {
        try await request(url, headers: headers, origins: origins) { (response) throws(DownloadFailure) in
            String(decoding: try await Self.read(response, url: url) { _ in false }, as: UTF8.self)
        }
    }

    /// Reads a body until it ends or `stop` says so, at most ``maxManifestBytes``.
    private static func read(_ response: HTTPClientResponse, url: URL, stop: ([UInt8]) -> Bool) async throws(DownloadFailure) -> [UInt8] {
        var body: [UInt8] = []
        do {
            for try await buffer in response.body {
                body += buffer.readableBytesView
                guard body.count <= maxManifestBytes else { throw DownloadFailure.invalidContent(url: url.absoluteString, reason: "manifest larger than 32 MB") }
                if stop(body) { break }
            }
        } catch {
            throw DownloadFailure(error, url: url.absoluteString)
        }
        return body
    }

    private func request<T>(_ url: URL, headers: [String: String], origins: OriginPolicy, accepting: Set<UInt> = [200],
                            _ body: (HTTPClientResponse) async throws(DownloadFailure) -> T) async throws(DownloadFailure) -> T {
        let response: HTTPClientResponse
        var request = HTTPClientRequest(url: url.absoluteString)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { request.headers.add(name: name, value: value) }
        do {
            response = try await guarded.execute(request, origins: origins, deadline: .now() + .seconds(60), open: client)
        } catch {
            throw DownloadFailure(error, url: url.absoluteString)
        }
        guard accepting.contains(response.status.code) else { throw .httpStatus(url: url.absoluteString, status: Int(response.status.code)) }
        return try await body(response)
    }

    // MARK: Files

    /// Downloads one resource unless it is complete. Returns a warning when the final size disagrees
    /// with the size the manifest or the probe declared (the file is still complete). Every file is opened inside the
    /// asset's folder without following links (`AssetStore.folder(_:of:create:url:)`).
    package func fetch(_ resource: DownloadResource, index: Int, assetID: String, store: any AssetStoring, headers: [String: String],
                      origins: OriginPolicy, budget: DownloadBudget, progress: LiveProgress) async throws(DownloadFailure) -> String? {
        guard let (folder, name) = try store.folder(assetID, of: resource.localPath, create: true, url: resource.url) else {
            throw .fileSystem(path: store.path(assetID, resource.localPath), message: "the folder is missing")
        }
        if folder.size(name) != nil { return nil }
        let part = PartFile(folder: folder, name: name + ".part", final: name)
        var have = folder.size(part.name) ?? 0
        if let length = resource.range?.length {
            if have > Int64(length) { try part.restart(have: &have, budget: budget, progress: progress) }
            if have == Int64(length) { return try part.complete(resource, index: index, size: have, announced: nil, progress: progress) }
        }
        let base = Int64(resource.range?.offset ?? 0)
        var request = HTTPClientRequest(url: resource.url)
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { request.headers.add(name: name, value: value) }
        if let length = resource.range?.length {
            request.headers.add(name: "Range", value: "bytes=\(base + have)-\(base + Int64(length) - 1)")
        } else if have > 0 {
            request.headers.add(name: "Range", value: "bytes=\(have)-")
        }
        // Resume only if the origin's file is still the one the part came from (else it sends it whole).
        if have > 0, let validator = part.validator() {
            request.headers.add(name: "If-Range", value: validator)
        }
        let response: HTTPClientResponse
        do {
            response = try await guarded.execute(request, origins: origins, deadline: .distantFuture, open: client)
        } catch {
            throw DownloadFailure(error, url: resource.url)
        }
        let status = Int(response.status.code)
        var skip: Int64 = 0
        var announced = response.headers.first(name: "content-length").flatMap { Int64($0) }
        switch status {
        case 206:
            let contentRange = PartFile.contentRange(response.headers.first(name: "content-range"))
            guard let contentRange, contentRange.start == base + have else {
                throw .invalidContent(url: resource.url, reason: "the origin answered a different range (\(response.headers.first(name: "content-range")?.prefix(64) ?? "none"))")
            }
            // A byte-range resource is checked against its own length below; a whole file against the total.
            announced = resource.range == nil ? contentRange.total : nil
            // An origin that ignores If-Range answers a resume from another version of the file: its validator or its
            // total gives it away. The part goes, and the file is fetched again from byte zero — never spliced.
            if have > 0, part.isOtherVersion(response, total: contentRange.total) {
                try part.restart(have: &have, budget: budget, progress: progress)
                throw .network(url: resource.url, message: "the file changed on the origin while it was downloaded; it is fetched again from the start")
            }
        case 200:
            if have > 0 { try part.restart(have: &have, budget: budget, progress: progress) }  // the origin ignored Range
            skip = base
            if resource.range != nil { announced = nil }
        case 416 where resource.range == nil && have > 0:
            // The part may already be whole (killed before the rename): the origin says how long the file is.
            if PartFile.contentRange(response.headers.first(name: "content-range"))?.total == have {
                return try part.complete(resource, index: index, size: have, announced: nil, progress: progress)
            }
            try part.restart(have: &have, budget: budget, progress: progress)
            throw .httpStatus(url: resource.url, status: status)
        default:
            throw .httpStatus(url: resource.url, status: status)
        }
        if let contentType = response.headers.first(name: "content-type") {
            let permitted = resource.permittedMimeTypes.map { MIMEType.permits($0, contentType) } ?? !MIMEType.isWebPage(contentType)
            guard permitted else { throw .mimeType(url: resource.url, mimeType: MIMEType.essence(contentType)) }
        }

        let mode = PrivateFiles.fileMode  // the device's downloads are its owner's alone
        let fd = folder.openFile(part.name, O_WRONLY | O_CREAT | O_APPEND, mode: mode)
        guard fd >= 0 else { throw part.failure() }
        defer { close(fd) }
        if have == 0 {
            // A fresh part remembers the validator a later resume must match (a strong ETag, else Last-Modified), and
            // the file's total length.
            PartFile.setAttribute(PartFile.validatorAttribute, PartFile.validator(of: response), on: fd)
            let total = status == 206 ? PartFile.contentRange(response.headers.first(name: "content-range"))?.total
                : response.headers.first(name: "content-length").flatMap { Int64($0) }
            PartFile.setAttribute(PartFile.lengthAttribute, total.map(String.init), on: fd)
        }
        var remaining = resource.range.map { Int64($0.length) - have }
        var sniffed = have > 0
        var speed = LowSpeedGuard(limit: lowSpeed)
        do {
            for try await buffer in response.body {
                if Task.isCancelled { throw DownloadFailure.cancelled }
                try speed.check(received: buffer.readableBytes, url: resource.url)
                var view = buffer.readableBytesView[...]
                if skip > 0 {
                    let dropped = min(Int64(view.count), skip)
                    view = view.dropFirst(Int(dropped))
                    skip -= dropped
                }
                if let left = remaining, Int64(view.count) > left { view = view.prefix(Int(left)) }
                if view.isEmpty { if remaining == 0 { break } else { continue } }
                if !sniffed {
                    sniffed = true
                    if resource.kind != .manifest, MIMEType.looksLikeWebPage(view) {
                        throw DownloadFailure.invalidContent(url: resource.url, reason: "an HTML page instead of media")
                    }
                }
                try budget.reserve(Int64(view.count))
                try AssetFolder.writeAll(fd, view, path: part.path)
                have += Int64(view.count)
                progress.add(Int64(view.count))
                if let left = remaining {
                    remaining = left - Int64(view.count)
                    if remaining == 0 { break }
                }
            }
        } catch let failure as DownloadFailure {
            throw failure
        } catch {
            throw DownloadFailure(error, url: resource.url)
        }
        if let length = resource.range?.length, have != Int64(length) {
            throw .network(url: resource.url, message: "the body ended after \(have) of \(length) bytes")
        }
        if resource.kind == .key, have != 16 {
            try part.restart(have: &have, budget: budget, progress: progress)
            throw .invalidContent(url: resource.url, reason: "an AES-128 key must be 16 bytes")
        }
        try await part.sync(fd)  // the bytes are on disk before the name says complete
        return try part.complete(resource, index: index, size: have, announced: announced, budget: budget, progress: progress)
    }
}
