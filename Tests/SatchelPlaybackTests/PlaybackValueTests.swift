import Foundation
import SatchelDevice
import SatchelRights
import SatchelDownloads
import SatchelStreams
@testable import SatchelPlayback
import Testing

/// The proxy's pure parts with values: the asset map (keys, IVs, init segments, paths) and the
/// playlists given to players without DRM.
@Suite struct PlaybackValueTests {
    @Test("paths resolve inside the asset's folder only; absolute URLs and escapes do not")
    func paths() {
        #expect(HLSAssetMap.resolve("seg/1.ts", from: "v/media.m3u8") == "v/seg/1.ts")
        #expect(HLSAssetMap.resolve("../a/media.m3u8", from: "v/master.m3u8") == "a/media.m3u8")
        #expect(HLSAssetMap.resolve("./x%20y.ts?t=1", from: "m.m3u8") == "x y.ts")
        for outside in ["../x.ts", "../../x.ts", "http://o/x.ts", "/etc/passwd", "a//b.ts", "data:text/plain,x"] {
            #expect(HLSAssetMap.resolve(outside, from: "m.m3u8") == nil, "\(outside)")
        }
    }

    @Test("the map: keys carry forward until replaced or removed; IV from the tag or the media sequence; init segments; every listed file; the clear playlist loses key tags only")
    func map() throws {
        let master = """
        #EXTM3U
        #EXT-X-SESSION-KEY:METHOD=AES-128,URI="https://k/keys/0123456789abcdef0123456789abcdef"
        #EXT-X-STREAM-INF:BANDWIDTH=1000000
        v/media.m3u8

        """
        let media = """
        #EXTM3U
        #EXT-X-TARGETDURATION:2
        #EXT-X-MEDIA-SEQUENCE:7
        #EXT-X-MAP:URI="init.mp4"
        #EXT-X-KEY:METHOD=AES-128,URI="https://k/keys/0123456789abcdef0123456789abcdef"
        #EXTINF:2,
        s0.ts
        #EXTINF:2,
        s1.ts
        #EXT-X-KEY:METHOD=AES-128,URI="https://k/keys/2",IV=0x000102030405060708090a0b0c0d0e0f
        #EXTINF:2,
        s2.ts
        #EXT-X-KEY:METHOD=NONE
        #EXTINF:2,
        s3.ts
        #EXT-X-ENDLIST

        """
        let files = ["master.m3u8": master, "v/media.m3u8": media]
        let map = try HLSAssetMap.build(entry: "master.m3u8") { (path: String) throws(StreamError) -> String in
            guard let text = files[path] else { throw .invalidContent("no \(path)") }
            return text
        }
        #expect(map.playlists == ["master.m3u8", "v/media.m3u8"] && map.isProtected)
        #expect(map.listed == ["v/init.mp4", "v/s0.ts", "v/s1.ts", "v/s2.ts", "v/s3.ts"])
        #expect(map.segments["v/s0.ts"]?.iv == Array(repeating: 0, count: 15) + [7] && map.segments["v/s0.ts"]?.map == "v/init.mp4")
        #expect(map.segments["v/s1.ts"]?.iv == Array(repeating: 0, count: 15) + [8])
        #expect(map.segments["v/s2.ts"]?.iv == Array(0...15) && map.segments["v/s2.ts"]?.keyURI == "https://k/keys/2")
        #expect(map.segments["v/s3.ts"] == nil, "METHOD=NONE: clear from there on")
        let clear = HLSAssetMap.clearPlaylist(media)
        #expect(!clear.contains("EXT-X-KEY") && clear.contains("#EXT-X-MAP:URI=\"init.mp4\"") && clear.contains("#EXT-X-MEDIA-SEQUENCE:7"))
        #expect(clear.components(separatedBy: "#EXTINF").count == 5 && clear.hasSuffix("#EXT-X-ENDLIST\n"))
        #expect(!HLSAssetMap.clearPlaylist(master).contains("SESSION-KEY"))
        let malformed = ["master.m3u8": "#EXTM3U\n#EXTINF:x,\ns.ts\n"]
        #expect(throws: StreamError.self) {
            try HLSAssetMap.build(entry: "master.m3u8") { (path: String) throws(StreamError) -> String in malformed[path] ?? "" }
        }
    }

    @Test("a multi-DRM playlist's key tags: the identity tag (with its IV) is the one read, whatever comes first; with Widevine and PlayReady alone, the method is kept and their data URIs are no key to fetch")
    func multiDRMKeyTags() throws {
        let widevine = #"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;base64,AAAA",KEYID=0x00112233445566778899aabbccddeeff,KEYFORMAT="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed",KEYFORMATVERSIONS="1""#
        let playReady = #"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;charset=UTF-16;base64,BBBB",KEYFORMAT="com.microsoft.playready",KEYFORMATVERSIONS="1""#
        let fairPlay = #"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://movie",KEYFORMAT="com.apple.streamingkeydelivery",KEYFORMATVERSIONS="1""#
        let identity = #"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="https://k/keys/a",IV=0x000102030405060708090a0b0c0d0e0f,KEYFORMAT="identity",KEYFORMATVERSIONS="1""#
        func protection(_ tags: [String]) throws -> SegmentProtection? {
            let media = (["#EXTM3U", "#EXT-X-TARGETDURATION:2", #"#EXT-X-MAP:URI="init.mp4""#] + tags + ["#EXTINF:2,", "s0.m4s", "#EXT-X-ENDLIST", ""])
                .joined(separator: "\n")
            return try HLSAssetMap.build(entry: "media.m3u8") { (_: String) throws(StreamError) -> String in media }.segments["s0.m4s"]
        }
        let all = try protection([widevine, playReady, fairPlay, identity])
        #expect(all?.keyURI == "https://k/keys/a" && all?.iv == Array(0...15) && all?.ivFromTag == true && all?.method == .sampleAES)
        let fairPlayFirst = try protection([widevine, fairPlay])
        #expect(fairPlayFirst?.keyURI == "skd://movie", "FairPlay's is a key Satchel's own playback knows")
        let vendors = try protection([widevine, playReady])
        #expect(vendors?.method == .sampleAES && vendors?.keyURI == nil && vendors?.ivFromTag == false, "\(String(describing: vendors))")
    }

    @Test("the key tag's method is read once, as a type: the router and the content's report agree on every spelling (SAMPLE-AES-CENC is cenc, made clear like SAMPLE-AES-CTR); an unknown method is named, not decrypted")
    func methodAsType() throws {
        #expect(EncryptionMethod(tag: "aes-128") == .aes128 && EncryptionMethod(tag: "SAMPLE-AES") == .sampleAES)
        #expect(EncryptionMethod(tag: "SAMPLE-AES-CTR") == .sampleAESCTR && EncryptionMethod(tag: "sample-aes-cenc") == .sampleAESCTR)
        #expect(EncryptionMethod(tag: "ISO-23001-7") == .other("ISO-23001-7") && EncryptionMethod(tag: "x").tag == "X")
        for (method, scheme, fragments) in [("SAMPLE-AES-CENC", "cenc", true), ("SAMPLE-AES-CTR", "cenc", true), ("SAMPLE-AES", "sample-aes", true),
                                            ("AES-128", "aes-128", false), ("ISO-23001-7", "iso-23001-7", false)] {
            let media = ["#EXTM3U", "#EXT-X-TARGETDURATION:2", #"#EXT-X-MAP:URI="init.mp4""#,
                         #"#EXT-X-KEY:METHOD=\#(method),URI="https://k/keys/a",IV=0x000102030405060708090a0b0c0d0e0f"#,
                         "#EXTINF:2,", "s0.m4s", "#EXT-X-ENDLIST", ""].joined(separator: "\n")
            let map = try HLSAssetMap.build(entry: "media.m3u8") { (_: String) throws(StreamError) -> String in media }
            #expect(ContentInfo.schemes(of: map) == [scheme], "\(method)")
            let route = StreamRouter(map: map, transcript: nil, forwarding: nil, decrypting: true, keepsManifest: false, singleFile: nil).route("s0.m4s")
            switch route {
            case .cmafFragment?: #expect(fragments, "\(method)")
            case .aes128?: #expect(method == "AES-128")
            case let .undecryptable(_, reason)?: #expect(method == "ISO-23001-7" && reason.contains("ISO-23001-7"), "\(reason)")
            default: Issue.record("\(method): \(String(describing: route))")
            }
        }
    }

    @Test("fMP4 made clear that still carries protection is refused as unsupported-protection, naming what is left; clear output passes")
    func clearOutputRefused() throws {
        func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let size = UInt32(8 + payload.count)
            return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + payload
        }
        let left = box("moof", box("traf", box("senc", [0, 0, 0, 0, 0, 0, 0, 0])))
        #expect(throws: PlaybackError.unsupportedProtection("s1.m4s still carries protection once made clear (moof/traf/senc): the proxy does not serve it as media")) {
            try ClearOutput.check(left, of: "video/s1.m4s")
        }
        #expect(PlaybackError.unsupportedProtection("x").code == "unsupported-protection")
        try ClearOutput.check(box("moof", box("traf", box("tfhd", [0, 0, 0, 0, 0, 0, 0, 1]))), of: "video/s1.m4s")
    }

    @Test("key forwarding: http and https key URIs of EXT-X-KEY and EXT-X-SESSION-KEY on an allowed license host become session paths, each once, in order; skd://, relative, data URIs and other hosts stay; only known indices resolve")
    func keyForwarding() throws {
        let master = "#EXTM3U\n#EXT-X-SESSION-KEY:METHOD=SAMPLE-AES,URI=\"https://k/keys/a\",KEYFORMAT=\"identity\"\n#EXT-X-STREAM-INF:BANDWIDTH=1\nv.m3u8\n"
        let media = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://movie",KEYFORMAT="com.apple.streamingkeydelivery"
            #EXT-X-KEY:METHOD=SAMPLE-AES,URI="https://k/keys/a",KEYFORMAT="identity"
            #EXTINF:2,
            https://k/keys/not-a-key.ts
            #EXT-X-KEY:METHOD=AES-128,URI="HTTP://other/keys/b"
            #EXTINF:2,
            s1.ts
            #EXT-X-KEY:METHOD=AES-128,URI="keys/local"
            #EXTINF:2,
            s2.ts
            #EXT-X-KEY:METHOD=AES-128,URI="https://attacker.example/steal"
            #EXTINF:2,
            s3.ts
            #EXT-X-KEY:METHOD=AES-128,URI="https://k:8443/other-port"
            #EXTINF:2,
            s4.ts
            #EXT-X-KEY:METHOD=AES-128,URI="https://user@k/with-credentials"
            #EXTINF:2,
            s5.ts
            #EXT-X-ENDLIST

            """
        // Credentials go only to the allowed hosts: "k" on any port would need "k"; "other" is allowed on any port.
        let forwarding = try KeyForwarding(playlists: [master, media], hosts: ["k:443", "K", "OTHER"])
        #expect(forwarding.targets == ["https://k/keys/a", "HTTP://other/keys/b", "https://k:8443/other-port"])
        let rewritten = forwarding.rewrite(media, token: "T")
        #expect(rewritten.contains("URI=\"skd://movie\"") && rewritten.contains("URI=\"/T/.satchel/keys/0\",KEYFORMAT=\"identity\"")
                && rewritten.contains("URI=\"/T/.satchel/keys/1\"") && rewritten.contains("URI=\"keys/local\"")
                && rewritten.contains("https://k/keys/not-a-key.ts"), "\(rewritten)")
        // A key URI on a host the content chose keeps its URI: the player's request never passes the proxy's credentials.
        #expect(rewritten.contains("URI=\"https://attacker.example/steal\"") && rewritten.contains("URI=\"https://user@k/with-credentials\""))
        #expect(rewritten.contains("URI=\"/T/.satchel/keys/2\"") && forwarding.target(".satchel/keys/2") == "https://k:8443/other-port")
        let portOnly = try KeyForwarding(playlists: [media], hosts: ["k:8443"])
        #expect(portOnly.targets == ["https://k:8443/other-port"])
        #expect(try KeyForwarding(playlists: [master, media], hosts: []).targets.isEmpty)
        #expect(PlaybackProxy.Configuration.licenseHost(of: "http://127.0.0.1:8081/") == "127.0.0.1:8081")
        #expect(PlaybackProxy.Configuration.licenseHost(of: "https://Licenses.Example") == "licenses.example")
        #expect(forwarding.rewrite(master, token: "T").contains("URI=\"/T/.satchel/keys/0\""))
        #expect(forwarding.target(".satchel/keys/1") == "HTTP://other/keys/b")
        for path in [".satchel/keys/3", ".satchel/keys/-1", ".satchel/keys/", ".satchel/keys/1x", "keys/0"] { #expect(forwarding.target(path) == nil, "\(path)") }
    }

    @Test("a plan's files by path with where they are on the origin: byte ranges as closed ranges, an empty range is none")
    func originOfPlan() {
        let plan = DownloadPlan(format: .hls, mainPath: "m.m3u8", manifests: [], resources: [
            DownloadResource(url: "https://o/a.mp4", localPath: "a/seg1.mp4", range: .init(offset: 100, length: 50), kind: .segment),
            DownloadResource(url: "https://o/b.ts", localPath: "b.ts", kind: .segment, expectedSize: 7),
            DownloadResource(url: "https://o/c.mp4", localPath: "c.mp4", range: .init(offset: 5, length: 0), kind: .initialization),
        ], totalDuration: nil)
        let files = DownloadLibrary.origin(of: plan)
        #expect(files["a/seg1.mp4"] == OriginFile(url: "https://o/a.mp4", range: 100...149) && files["a/seg1.mp4"]?.expectedSize == 50)
        #expect(files["b.ts"] == OriginFile(url: "https://o/b.ts", expectedSize: 7))
        #expect(files["c.mp4"]?.range == nil && files.count == 3)
    }

    @Test("the proxy binds to loopback only")
    func loopbackOnly() throws {
        struct Nothing: PlaybackLibrary {
            func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset { throw .unknownAsset(assetID) }
        }
        for host in ["0.0.0.0", "192.168.1.2", "::", "example.com"] {
            #expect(throws: PlaybackError.notLoopback(host)) { try PlaybackProxy(library: Nothing(), rights: nil, configuration: .init(host: host)) }
        }
        _ = try PlaybackProxy(library: Nothing(), rights: nil, configuration: .init(host: "::1"))
    }

    @Test("a system HTTP proxy that would capture the loopback URL is said, naming the variable and never its value; no_proxy covering 127.0.0.1 silences it")
    func systemProxy() {
        #expect(SystemProxyCheck.warning(environment: [:]) == nil)
        let warned = SystemProxyCheck.warning(environment: ["HTTP_PROXY": "http://user:secret@proxy.example:3128"])
        #expect(warned?.contains("HTTP_PROXY is set") == true && warned?.contains("no_proxy=127.0.0.1") == true && warned?.contains("secret") == false)
        #expect(SystemProxyCheck.warning(environment: ["http_proxy": "http://p:3128", "no_proxy": "example.com, 127.0.0.1"]) == nil)
        #expect(SystemProxyCheck.warning(environment: ["http_proxy": "http://p:3128", "NO_PROXY": "*"]) == nil)
        #expect(SystemProxyCheck.warning(environment: ["all_proxy": "socks5://p:1080", "no_proxy": "127.0.0.0/8"]) == nil)
        #expect(SystemProxyCheck.warning(environment: ["http_proxy": "http://p:3128", "no_proxy": "localhost,example.com"]) != nil,
                "localhost is a name: a player asking for 127.0.0.1 still goes to the proxy")
        #expect(SystemProxyCheck.warning(environment: ["http_proxy": ""]) == nil)
    }
    @Test("audio selection: by name, else language (a prefix takes a region), the chosen rendition the default of every group, the others kept")
    func audioSelection() {
        let tracks = [AudioTrack(language: "en", name: "English", codec: "mp4a.40.2", channels: "2"),
                      AudioTrack(language: "fr-CA", name: "Québécois", codec: "mp4a.40.2", channels: "2"),
                      AudioTrack(language: "en", name: "Commentary", codec: "mp4a.40.2", channels: "2")]
        #expect(AudioSelection.track("commentary", in: tracks)?.name == "Commentary")
        #expect(AudioSelection.track("en", in: tracks)?.name == "English")
        #expect(AudioSelection.track("fr", in: tracks)?.name == "Québécois")
        #expect(AudioSelection.track("de", in: tracks) == nil)
        let master = """
        #EXTM3U
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="English",LANGUAGE="en",DEFAULT=YES,AUTOSELECT=YES,URI="en.m3u8"
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="Québécois",LANGUAGE="fr-CA",URI="fr.m3u8"
        #EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="s",NAME="English",LANGUAGE="en",DEFAULT=YES,URI="s.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=1000000,AUDIO="a",SUBTITLES="s"
        v.m3u8
        """
        let chosen = AudioSelection.apply(tracks[1], to: master).split(separator: "\n").map(String.init)
        #expect(chosen[1] == #"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="English",LANGUAGE="en",DEFAULT=NO,AUTOSELECT=YES,URI="en.m3u8""#)
        #expect(chosen[2] == #"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="Québécois",LANGUAGE="fr-CA",URI="fr.m3u8",DEFAULT=YES,AUTOSELECT=YES"#)
        #expect(Array(chosen[3...]) == Array(master.split(separator: "\n").map(String.init)[3...]), "subtitles and variants untouched")
    }
}
