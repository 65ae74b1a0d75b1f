import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SatchelPlayback
import SatchelTestSupport
import Testing

/// The proxy against the attacks that found its holes: links planted in an asset's folder (a folder link to the
/// data directory, `up → ..`, the asset folder itself a link, a file link to a key), a web page reaching the
/// loopback proxy by DNS rebinding (another `Host`), an origin that sends a file without a length (streamed, never
/// held whole), and an origin that trickles (cut, and the player told).
@Suite struct ProxySecurityTests {
    /// A library of fixed folders, by asset ID.
    struct Folders: PlaybackLibrary {
        let paths: [String: String]
        func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
            guard let path = paths[assetID] else { throw .unknownAsset(assetID) }
            return PlayableAsset(path: path, entry: "index.m3u8")
        }
    }

    /// A library of one asset whose files come from an origin.
    struct Online: PlaybackLibrary {
        let base: String
        func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
            let playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\ns0.ts\n#EXT-X-ENDLIST\n"
            return PlayableAsset(folder: nil, entry: "index.m3u8", manifests: ["index.m3u8": playlist], origin: ["s0.ts": OriginFile(url: base + "/s0.ts")])
        }
    }

    static let clearPlaylist = "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:4,\ns0.ts\n#EXT-X-ENDLIST\n"

    @Test("links in an asset's folder are refused, never followed: a folder link to the data directory, `up → ../..`, a link to /etc, a file link to a key, and the asset folder itself a link; the real segment is served")
    func plantedLinks() async throws {
        let root = try TestMedia.temporaryDirectory("proxy-links")
        let data = root.appendingPathComponent("data"), assets = root.appendingPathComponent("assets")
        let movie = assets.appendingPathComponent("movie")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: movie.appendingPathComponent("video_0"), withIntermediateDirectories: true)
        let secret = "-----BEGIN PRIVATE KEY----- not to be served"
        try secret.write(to: data.appendingPathComponent("device-key.pem"), atomically: true, encoding: .utf8)
        try Self.clearPlaylist.write(to: movie.appendingPathComponent("index.m3u8"), atomically: true, encoding: .utf8)
        try Data([0x47, 1, 2, 3]).write(to: movie.appendingPathComponent("s0.ts"))
        let links: [(String, String)] = [("lnkdir", data.path), ("video_0/up", "../.."), ("etc", "/etc"),
                                         ("alias.ts", data.appendingPathComponent("device-key.pem").path)]
        for (name, target) in links {
            try FileManager.default.createSymbolicLink(atPath: movie.appendingPathComponent(name).path, withDestinationPath: target)
        }
        try FileManager.default.createSymbolicLink(atPath: assets.appendingPathComponent("linked").path, withDestinationPath: data.path)
        try secret.write(to: data.appendingPathComponent("index.m3u8"), atomically: true, encoding: .utf8)

        let proxy = try PlaybackProxy(library: Folders(paths: ["movie": movie.path, "linked": assets.appendingPathComponent("linked").path]),
                                      rights: nil)
        defer { Task { await proxy.stop() } }
        let url = try await proxy.open(asset: "movie")
        let base = String(url.dropLast("index.m3u8".count))
        let served = try await PlaybackProxyTests.get(base + "s0.ts")
        #expect(served.status == 200 && served.body == [0x47, 1, 2, 3])
        for path in ["lnkdir/device-key.pem", "video_0/up/movie/index.m3u8", "video_0/up/../data/device-key.pem", "etc/passwd", "etc/hostname",
                     "alias.ts", "lnkdir/index.m3u8", "video_0/up/linked/device-key.pem"] {
            let answer = try await PlaybackProxyTests.get(base + path)
            #expect(answer.status == 404, "\(path): \(answer.status)")
            #expect(!String(decoding: answer.body, as: UTF8.self).contains("PRIVATE KEY"), "\(path)")
        }
        // The asset's folder itself a link (to the data directory): nothing of it opens.
        await #expect(throws: PlaybackError.self) { try await proxy.open(asset: "linked") }
    }

    @Test("the proxy answers only requests addressed to 127.0.0.1, localhost or [::1]: a rebinding page's own Host gets 403 problem+json")
    func rebindingHost() async throws {
        let root = try TestMedia.temporaryDirectory("proxy-host")
        try Self.clearPlaylist.write(to: root.appendingPathComponent("index.m3u8"), atomically: true, encoding: .utf8)
        try Data([0x47]).write(to: root.appendingPathComponent("s0.ts"))
        let proxy = try PlaybackProxy(library: Folders(paths: ["a": root.path]), rights: nil)
        defer { Task { await proxy.stop() } }
        let url = try #require(URL(string: try await proxy.open(asset: "a")))
        let port = try #require(url.port)
        let answers = try await TestMedia.offloaded { () throws -> [String: String] in
            var answers: [String: String] = [:]
            for host in ["evil.example", "evil.example:\(port)", "127.0.0.1.evil.example", "localhost:80x", "127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST"] {
                let connection = try RawConnection(port: port, timeout: 10)
                connection.send("GET \(url.path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                answers[host] = connection.readResponse()
            }
            return answers
        }
        for host in ["evil.example", "evil.example:\(port)", "127.0.0.1.evil.example", "localhost:80x"] {
            let answer = answers[host] ?? ""
            #expect(answer.hasPrefix("HTTP/1.1 403") && answer.contains("host-not-allowed") && !answer.contains("#EXTM3U"), "\(host): \(answer.prefix(200))")
        }
        for host in ["127.0.0.1:\(port)", "localhost:\(port)", "LOCALHOST"] {
            #expect(answers[host]?.hasPrefix("HTTP/1.1 200") == true && answers[host]?.contains("#EXTM3U") == true, "\(host)")
        }
    }

    /// An origin whose `s0.ts` is sent without Content-Length: a first MiB, then, once `release` is raised, a second.
    final class ChunkedOrigin: @unchecked Sendable {
        let released = AsyncStream.makeStream(of: Void.self)
        var task: Task<Void, any Error>?
        var base = ""

        func start(trickle: Bool = false) async {
            let router = Router()
            let release = released.stream
            router.get("/s0.ts") { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = "video/mp2t"
                return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                    if trickle {
                        for _ in 0..<60 {
                            try await writer.write(ByteBuffer(bytes: [0x47]))
                            try await Task.sleep(for: .milliseconds(500))
                        }
                    } else {
                        try await writer.write(ByteBuffer(repeating: 0x47, count: 1 << 20))
                        for await _ in release { break }
                        try await writer.write(ByteBuffer(repeating: 0x48, count: 1 << 20))
                    }
                    try await writer.finish(nil)
                })
            }
            (task, base) = await LoopbackServer.start(router, label: "chunked-origin")
        }

        func stop() { task?.cancel() }
    }

    @Test("a file the origin sends without a length is streamed on as it arrives (chunked), not held whole: the player has the first MiB before the origin sends the second")
    func unannouncedLengthStreams() async throws {
        let origin = ChunkedOrigin()
        await origin.start()
        defer { origin.stop() }
        let proxy = try PlaybackProxy(library: Online(base: origin.base), rights: nil)
        defer { Task { await proxy.stop() } }
        let url = try await proxy.open(asset: "a")
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: String(url.dropLast("index.m3u8".count)) + "s0.ts"), timeout: .seconds(10))
        #expect(response.status == .ok && response.headers.first(name: "content-length") == nil)
        var received = 0
        var released = false
        for try await buffer in response.body {
            received += buffer.readableBytes
            if received >= 1 << 20, !released {
                released = true
                origin.released.continuation.yield()  // only now does the origin send the rest
            }
        }
        #expect(received == 2 << 20)
    }

    @Test("an origin that trickles (a byte every half second) is cut by the pace, the player's answer ends short and the server-error event says why")
    func tricklingOriginIsCut() async throws {
        let origin = ChunkedOrigin()
        await origin.start(trickle: true)
        defer { origin.stop() }
        let proxy = try PlaybackProxy(library: Online(base: origin.base), rights: nil,
                                      configuration: .init(originPace: OriginPace(bytesPerSecond: 100, period: .seconds(2), deadline: .seconds(10))))
        defer { Task { await proxy.stop() } }
        let url = try await proxy.open(asset: "a")
        let started = ContinuousClock.now
        let response = try await HTTPClient.shared.execute(HTTPClientRequest(url: String(url.dropLast("index.m3u8".count)) + "s0.ts"), timeout: .seconds(60))
        var received = 0
        do {
            for try await buffer in response.body { received += buffer.readableBytes }
            Issue.record("the answer ended normally after \(received) bytes")
        } catch {
            // Cut short: the player asks again.
        }
        #expect(received < 30, "cut long before the origin's 60 bytes")
        #expect(ContinuousClock.now - started < .seconds(20))
        await proxy.stop()  // ends the event stream
        var reported = false
        for await event in proxy.events {
            if case let .serverError(_, path, _, reason, _) = event, path == "s0.ts", reason.contains("too slow") { reported = true }
        }
        #expect(reported)
    }
}
