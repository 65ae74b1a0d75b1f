import Foundation
import SatchelStreams
import SatchelMedia
import SatchelPackager
import SatchelProtection
import SatchelTestSupport
import Testing

@Suite("HLS download planning")
struct HLSDownloadPlannerTests {
    static let masterText = """
    #EXTM3U
    #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",LANGUAGE="en",DEFAULT=YES,URI="audio/en.m3u8"
    #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="de",LANGUAGE="de-DE",DEFAULT=NO,URI="audio/de.m3u8"
    #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="fr",LANGUAGE="fr",DEFAULT=NO,URI="audio/fr.m3u8"
    #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="s",NAME="en",LANGUAGE="en",DEFAULT=NO,URI="subs/en.m3u8"
    #EXT-X-STREAM-INF:BANDWIDTH=3000000,AUDIO="a",SUBTITLES="s"
    v/high.m3u8
    #EXT-X-STREAM-INF:BANDWIDTH=800000,AUDIO="a",SUBTITLES="s"
    v/low.m3u8
    #EXT-X-STREAM-INF:BANDWIDTH=1500000,AUDIO="a",SUBTITLES="s"
    v/mid.m3u8
    """
    static let master = try! HLSMasterPlaylist(parsing: masterText)
    static let url = URL(string: "https://cdn.example/movies/42/master.m3u8")!

    @Test("the variant is the highest not above maxBitrate, the lowest when none is, 0 = lowest, nil = highest")
    func variants() throws {
        let pick = { (max: Int?) throws -> String in try HLSDownloadPlanner.select(master: Self.master, url: Self.url, options: .init(maxBitrate: max)).variant.uri }
        #expect(try pick(nil) == "v/high.m3u8")
        #expect(try pick(0) == "v/low.m3u8")
        #expect(try pick(2_000_000) == "v/mid.m3u8")
        #expect(try pick(3_000_000) == "v/high.m3u8")
        #expect(try pick(100) == "v/low.m3u8")
    }

    @Test("renditions: DEFAULT=YES plus requested languages; playlists resolved against the master URL")
    func renditions() throws {
        let plain = try HLSDownloadPlanner.select(master: Self.master, url: Self.url, options: .init())
        #expect(plain.renditions.map(\.name) == ["en"])
        let german = try HLSDownloadPlanner.select(master: Self.master, url: Self.url, options: .init(languages: ["de", "en"]))
        #expect(german.renditions.map(\.name) == ["en", "de", "en"])
        #expect(german.playlists.map(\.absoluteString) == ["https://cdn.example/movies/42/v/high.m3u8", "https://cdn.example/movies/42/audio/en.m3u8",
                                                           "https://cdn.example/movies/42/audio/de.m3u8", "https://cdn.example/movies/42/subs/en.m3u8"])
        let local = try HLSMasterPlaylist(parsing: HLSDownloadPlanner.rewriteMaster(Self.masterText, selection: german, url: Self.url))
        #expect(local.variants.map(\.uri) == ["v/high.m3u8"] && local.renditions.count == 3)
    }

    @Test("byte ranges become files of their own; keys, maps and skd tags are handled; live playlists are refused")
    func mediaPlaylists() throws {
        let text = """
        #EXTM3U
        #EXT-X-TARGETDURATION:6
        #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example/k/1?token=abc",IV=0x01
        #EXT-X-MAP:URI="init.mp4",BYTERANGE="700@0"
        #EXTINF:6,
        #EXT-X-BYTERANGE:1000@700
        ../media.mp4
        #EXTINF:6,
        #EXT-X-BYTERANGE:2000
        ../media.mp4
        #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://asset",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1"
        #EXTINF:4,
        ../seg3.ts
        #EXT-X-ENDLIST
        """
        let playlistURL = URL(string: "https://cdn.example/movies/42/v/high.m3u8")!
        let (resources, rewritten) = try HLSDownloadPlanner.plan(mediaPlaylist: text, url: playlistURL, root: Self.url,
                                                                 options: .init(includeEncryptionKeys: true))
        #expect(resources.count == 5)
        #expect(resources[0].localPath.hasPrefix("external/keys.example/k/1_"), "a query string keeps distinct URLs distinct")
        #expect(resources.dropFirst().map(\.localPath) ==
                ["v/init.0-700.mp4", "media.700-1000.mp4", "media.1700-2000.mp4", "seg3.ts"])
        #expect(resources[3].range == .init(offset: 1700, length: 2000) && resources[0].kind == .key, "in document order")
        let local = try HLSMediaPlaylist(parsing: rewritten)
        #expect(local.segments.allSatisfy { $0.byteRange == nil })
        #expect(local.segments.map(\.uri) == ["../media.700-1000.mp4", "../media.1700-2000.mp4", "../seg3.ts"])
        #expect(local.segments[0].keys.first?.uri?.hasPrefix("../external/keys.example/") == true)
        #expect(local.segments[2].keys.first?.uri == "skd://asset", "FairPlay key tags are kept intact")
        let withoutKeys = try HLSDownloadPlanner.plan(mediaPlaylist: text, url: playlistURL, root: Self.url, options: .init())
        #expect(!withoutKeys.resources.contains { $0.kind == .key })
        #expect(try HLSMediaPlaylist(parsing: withoutKeys.playlist).segments[0].keys.first?.uri == "https://keys.example/k/1?token=abc")
        #expect(throws: StreamError.liveStream(playlistURL.absoluteString)) {
            try HLSDownloadPlanner.plan(mediaPlaylist: "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\na.ts\n", url: playlistURL, root: Self.url, options: .init())
        }
    }

    @Test("local paths stay inside the asset directory")
    func paths() throws {
        let root = URL(string: "https://cdn.example/a/b/master.m3u8")!
        #expect(try LocalPath.map(URL(string: "https://cdn.example/a/b/v/1.ts")!, root: root) == "v/1.ts")
        #expect(try LocalPath.map(URL(string: "https://cdn.example/a/x.ts")!, root: root) == "external/cdn.example/a/x.ts")
        #expect(try LocalPath.map(URL(string: "https://cdn.example/a/b/../../etc/passwd")!, root: root) == "external/cdn.example/etc/passwd")
        #expect(try LocalPath.map(URL(string: "https://other:8443/k")!, root: root) == "external/other_8443/k")
        #expect(LocalPath.relative("v/1.ts", from: "v/index.m3u8") == "1.ts")
        #expect(LocalPath.piece("a.b/all.m4s", offset: 10, length: 5) == "a.b/all.10-5.m4s" && LocalPath.piece("a.b/all", offset: 0, length: 1) == "a.b/all.0-1")
        #expect(LocalPath.relative("a/1.ts", from: "v/index.m3u8") == "../a/1.ts")
    }

    @Test("a package 'downloaded' by the plan plays from disk with the origin's packets (clear and AES-128 with keys)",
          arguments: [PackageScheme.clear, .aes128])
    func endToEnd(scheme: PackageScheme) async throws {
        try await TestMedia.offloaded {
            let input = try TestMedia.make("download-source", seconds: 6)
            let dir = try TestMedia.temporaryDirectory("download-\(scheme.rawValue)")
            let origin = dir.appendingPathComponent("origin")
            let keyDirectory = dir.appendingPathComponent("origin/keys")
            _ = try Packager(options: PackageOptions(inputs: [input.path], output: origin.path, format: .hlsTS, scheme: scheme,
                                                     keyURI: "https://origin.example/asset/keys/{kid}.key", segmentDuration: 2)).run()
            if scheme == .aes128 {
                try FileManager.default.createDirectory(at: keyDirectory, withIntermediateDirectories: true)
                for key in try KeyFile.read(origin.path + ".keys.json").contentKeys() {
                    try Data(key.key.bytes).write(to: keyDirectory.appendingPathComponent("\(key.keyID.hex).key"))
                }
            }
            // A fake origin: https://origin.example/asset/<path> is origin/<path>.
            func fetch(_ url: String, _ range: DownloadResource.ByteRange?) throws -> Data {
                let path = try #require(URL(string: url)?.path.replacingOccurrences(of: "/asset/", with: ""))
                let data = try Data(contentsOf: origin.appendingPathComponent(path))
                return range.map { data.subdata(in: $0.offset..<($0.offset + $0.length)) } ?? data
            }
            let masterURL = URL(string: "https://origin.example/asset/master.m3u8")!
            let local = dir.appendingPathComponent("local")
            let masterText = String(decoding: try fetch(masterURL.absoluteString, nil), as: UTF8.self)
            let master = try HLSMasterPlaylist(parsing: masterText)
            let selection = try HLSDownloadPlanner.select(master: master, url: masterURL, options: .init())
            try write(HLSDownloadPlanner.rewriteMaster(masterText, selection: selection, url: masterURL), to: local.appendingPathComponent("master.m3u8"))
            for playlistURL in selection.playlists {
                let text = String(decoding: try fetch(playlistURL.absoluteString, nil), as: UTF8.self)
                let (resources, rewritten) = try HLSDownloadPlanner.plan(mediaPlaylist: text, url: playlistURL, root: masterURL,
                                                                         options: .init(includeEncryptionKeys: true))
                try write(rewritten, to: local.appendingPathComponent(LocalPath.map(playlistURL, root: masterURL)))
                for resource in resources {
                    let target = local.appendingPathComponent(resource.localPath)
                    try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                    try fetch(resource.url, resource.range).write(to: target)
                }
            }
            // The local copy plays offline (keys included) and decodes to the clear package's packets.
            let clear = try Packager(options: PackageOptions(inputs: [input.path], output: dir.appendingPathComponent("clear").path,
                                                             format: .hlsTS, scheme: .clear, segmentDuration: 2)).run()
            for rendition in ["video_0", "audio_0"] {
                let localHashes = try TestMedia.packetHashes(local.appendingPathComponent("\(rendition)/index.m3u8").path)
                #expect(!localHashes.isEmpty)
                #expect(localHashes == (try TestMedia.packetHashes(clear.output + "/\(rendition)/index.m3u8")), "\(rendition)")
            }
            #expect(!(try TestMedia.packetHashes(local.appendingPathComponent("master.m3u8").path)).isEmpty)
        }
    }

    func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }
}
