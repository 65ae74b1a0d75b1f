import AsyncHTTPClient
import Foundation
import Logging
import SatchelBytes
import SatchelPackager
import SatchelPlayback
import SatchelProtection
import SatchelRights
import SatchelTestSupport
import Testing

/// A HEAD (players and link checkers send them) answers the headers a GET does, on every route, and is no use: it
/// starts no playback window (seed 000 §5.3.2d: first use is the first protected bytes sent).
@Suite struct HeadRequestTests {
    /// One packaged asset's folder as the library, entered by `entry`.
    struct Package: PlaybackLibrary {
        let path: String
        let entry: String
        func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
            PlayableAsset(path: path, entry: entry)
        }
    }

    /// The status and the headers a player reads before the body, of a HEAD (`isHead`) or a GET of `url`.
    static func head(_ url: String, isHead: Bool, range: String?) async throws -> [String: String] {
        var request = HTTPClientRequest(url: url)
        request.method = isHead ? .HEAD : .GET
        if let range { request.headers.add(name: "Range", value: range) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        _ = try await response.body.collect(upTo: 16 << 20)
        var headers = ["status": String(response.status.code)]
        for name in ["content-type", "content-length", "content-range", "accept-ranges", "transfer-encoding"] {
            headers[name] = response.headers.first(name: name)
        }
        return headers
    }

    /// The media files a session's playlists name (segments and init segments), walked from `entry`.
    static func mediaURLs(from entry: String) async throws -> [String] {
        var media: [String] = [], playlists = [entry], seen: Set<String> = []
        while let url = playlists.popLast() {
            guard seen.insert(url).inserted else { continue }
            let text = String(decoding: try await PlaybackProxyTests.get(url).body, as: UTF8.self)
            let base = URL(string: url)!
            for line in text.split(whereSeparator: \.isNewline).map(String.init) {
                var uris: [String] = []
                if line.hasPrefix("#EXT-X-MAP:") || line.hasPrefix("#EXT-X-MEDIA:"), let start = line.range(of: "URI=\"") {
                    uris.append(String(line[start.upperBound...].prefix { $0 != "\"" }))
                } else if !line.hasPrefix("#"), !line.isEmpty {
                    uris.append(line)
                }
                for uri in uris {
                    let resolved = URL(string: uri, relativeTo: base)!.absoluteString
                    if uri.hasSuffix(".m3u8") { playlists.append(resolved) } else if !media.contains(resolved) { media.append(resolved) }
                }
            }
        }
        return media
    }

    @Test("HEAD on every media route — AES-128 and SAMPLE-AES MPEG-TS (whole and streamed), CMAF cenc and cbcs, their init segments, DASH transcribed to MPEG-TS, clear — answers the status, type, length and range a GET does, whole and for a byte range; 20 HEADs of each register no use, the first GET does",
          arguments: [("hls-ts", "aes-128", false), ("hls-ts", "sample-aes", false), ("hls-ts", "sample-aes", true), ("cmaf", "cenc", false),
                      ("cmaf", "cbcs", false), ("cmaf", "cenc-dash", false), ("hls-ts", "clear", false)])
    func headAnswersAsGet(format: String, scheme: String, streamed: Bool) async throws {
        try TestMedia.require("ffmpeg")
        let folder = try TestMedia.temporaryDirectory("head-\(format)-\(scheme)")
        let key = try ContentKey(keyID: KeyID(hex: "0123456789abcdef0123456789abcdef"), key: SecretBytes(SecureRandom.bytes(16)), iv: SecureRandom.bytes(16))
        let packageScheme = try #require(PackageScheme(rawValue: scheme.replacingOccurrences(of: "-dash", with: "")))
        try await TestMedia.offloaded {
            let input = try TestMedia.make("head-source", seconds: 4)
            _ = try Packager(options: PackageOptions(inputs: [input.path], output: folder.path, format: try #require(PackageFormat(rawValue: format)),
                                                     scheme: packageScheme, key: packageScheme == .clear ? nil : key, segmentDuration: 2)).run()
        }
        let rights = PlaybackProxyTests.Rights([PlaybackKey(keyID: key.keyID.hex, key: key.key, iv: key.iv)])
        let entry = scheme.hasSuffix("-dash") ? "manifest.mpd" : "master.m3u8"
        let lines = Locked<[String]>([])
        var logger = Logger(label: "satchel.playback") { _ in CapturingHandler(lines: lines) }
        logger.logLevel = .debug
        let proxy = try PlaybackProxy(library: Package(path: folder.path, entry: entry), rights: packageScheme == .clear ? nil : rights,
                                      configuration: .init(transportInMemory: streamed ? 1024 : 16 << 20), logger: logger)
        let url = try await proxy.open(asset: "a")
        let media = try await Self.mediaURLs(from: url)
        #expect(media.count >= 2, "\(media)")
        let served = { lines.current.filter { $0.hasPrefix("served ") } }
        var servedBeforeHeads = served().count  // once the playlists' lines are all in
        while true {
            try await Task.sleep(for: .milliseconds(50))
            guard served().count != servedBeforeHeads else { break }
            servedBeforeHeads = served().count
        }
        var heads: [String: [String: String]] = [:]
        for file in media {
            for range in [nil, "bytes=0-99"] {
                for _ in 0..<20 { heads["\(file) \(range ?? "")"] = try await Self.head(file, isHead: true, range: range) }
            }
        }
        #expect(rights.uses.current == 0, "a HEAD starts no playback window")
        #expect(served().count == servedBeforeHeads, "a HEAD makes and sends no body")
        for file in media {
            for range in [nil, "bytes=0-99"] {
                let get = try await Self.head(file, isHead: false, range: range)
                let head = try #require(heads["\(file) \(range ?? "")"])
                #expect(get["status"] == "200" || get["status"] == "206", "\(file) \(range ?? ""): \(get)")
                #expect(head == get, "\(file) \(range ?? ""): HEAD \(head), GET \(get)")
            }
        }
        #expect(rights.uses.current == (packageScheme == .clear ? 0 : 1), "the first GET of media is the session's one use")
        // Each body served names the protection its transform removed.
        let expected = switch scheme {
        case "aes-128": "aes-128"
        case "sample-aes": "sample-aes"
        case "cenc", "cbcs": "common-encryption"
        case "cenc-dash": "dash-to-ts"
        default: "none"
        }
        // The line is logged once the body is through, which the player may see first.
        for _ in 0..<200 where served().count < servedBeforeHeads + 2 * media.count { try await Task.sleep(for: .milliseconds(10)) }
        let segments = served().dropFirst(servedBeforeHeads)
        #expect(segments.count == 2 * media.count)
        #expect(!segments.isEmpty && segments.allSatisfy { $0.contains("transform=\(expected)") }, "\(segments.prefix(2))")
        await proxy.stop()
    }

    @Test("HEAD on a single media file (cenc, made clear as it is sent) and on a Satchel protected file answers as a GET does, whole and for a byte range; 20 HEADs register no use, the first GET does")
    func headOnSingleFiles() async throws {
        let (folder, source, media) = try await SingleFileTests.protectedFixture("cenc", label: "head-single", clip: "head-single-source", seconds: 4)
        let key = try ContentKey(keyID: KeyID(hex: SingleFileTests.keyID), key: SecretBytes(hex: SingleFileTests.key, count: 16), iv: SecureRandom.bytes(16))
        let document = folder.appendingPathComponent("notes.satchel")
        try FileProtector.protect(input: source.path, output: document.path, key: key, contentType: "application/octet-stream")
        for name in [media.lastPathComponent, document.lastPathComponent] {
            let rights = try SingleFileTests.rights()
            let proxy = try PlaybackProxy(library: SingleFileTests.OneFile(folder: folder.path, name: name), rights: rights)
            let url = try await proxy.open(asset: "file")
            var heads: [String: [String: String]] = [:]
            for range in [nil, "bytes=100-199"] {
                for _ in 0..<20 { heads[range ?? ""] = try await Self.head(url, isHead: true, range: range) }
            }
            #expect(rights.uses.current == 0, "\(name): a HEAD starts no playback window")
            for range in [nil, "bytes=100-199"] {
                let get = try await Self.head(url, isHead: false, range: range)
                #expect(get["status"] == (range == nil ? "200" : "206") && heads[range ?? ""] == get, "\(name) \(range ?? ""): HEAD \(heads[range ?? ""] ?? [:]), GET \(get)")
            }
            #expect(rights.uses.current == 1, "\(name): the first GET is the session's one use")
            await proxy.stop()
        }
    }
}
