import Foundation
import SatchelBytes
import SatchelPackager
import SatchelPlayback
import SatchelProtection
import SatchelRights
import SatchelTestSupport
import Testing

/// No ciphertext handed to a player as media, MPEG-TS (issue 50, step 3): a transport stream the proxy made clear
/// whose program map still declares an encrypted stream is refused with unsupported-protection, never served.
@Suite struct CiphertextTransportTests {
    @Test("AES-128 over SAMPLE-AES (each segment of a SAMPLE-AES package encrypted whole again, its playlist saying AES-128): every segment, from disk and from the origin, whole or a range, is refused with unsupported-protection naming the encrypted streams; the same package as plain AES-128 plays; no refused segment starts a playback window, the first one played does")
    func aes128OverSampleAES() async throws {
        let folder = try TestMedia.temporaryDirectory("ciphertext-ts")
        let key = try ContentKey(keyID: KeyID(hex: "00112233445566778899aabbccddeeff"), key: SecretBytes(SecureRandom.bytes(16)), iv: SecureRandom.bytes(16))
        try await TestMedia.offloaded {
            let input = try TestMedia.make("ciphertext-ts", seconds: 4)
            for (name, scheme) in [("wrapped", PackageScheme.sampleAES), ("plain", .aes128)] {
                _ = try Packager(options: PackageOptions(inputs: [input.path], output: folder.appendingPathComponent(name).path, format: .hlsTS,
                                                         scheme: scheme, key: key, segmentDuration: 2)).run()
            }
        }
        // Each SAMPLE-AES segment encrypted whole with the same key and IV; the playlists say AES-128.
        let wrapped = folder.appendingPathComponent("wrapped")
        let cipher = try SegmentCipher(key: key.key)
        let files = TestMedia.files(under: wrapped)
        let segments = files.filter { $0.hasSuffix(".ts") }
        #expect(!segments.isEmpty)
        for segment in segments {
            let url = wrapped.appendingPathComponent(segment)
            #expect(!ClearOutputCheck.protection(inTS: try TestMedia.bytes(url)).isEmpty, "\(segment) is SAMPLE-AES")
            try Data(try cipher.encrypt(try TestMedia.bytes(url), iv: key.iv)).write(to: url)
        }
        for playlist in files where playlist.hasSuffix(".m3u8") {
            let url = wrapped.appendingPathComponent(playlist)
            try String(contentsOf: url, encoding: .utf8).replacingOccurrences(of: "METHOD=SAMPLE-AES", with: "METHOD=AES-128").write(to: url, atomically: true, encoding: .utf8)
        }
        let rights = PlaybackProxyTests.Rights([PlaybackKey(keyID: key.keyID.hex, key: key.key, iv: key.iv)])
        let origin = try await TestOrigin.start(root: folder)
        defer { origin.stop() }
        for online in [false, true] {
            var manifests: [String: String] = [:]
            for playlist in files where playlist.hasSuffix(".m3u8") {
                manifests[playlist] = try String(contentsOf: wrapped.appendingPathComponent(playlist), encoding: .utf8)
            }
            let remote = Dictionary(uniqueKeysWithValues: segments.map { ($0, OriginFile(url: origin.url("wrapped/" + $0))) })
            let library: any PlaybackLibrary = online ? OnlineLibrary(manifests: manifests, origin: remote) : SampleAESProxyTests.Package(path: wrapped.path)
            let proxy = try PlaybackProxy(library: library, rights: rights)
            let base = String(try await proxy.open(asset: "a").dropLast("master.m3u8".count))
            for segment in segments {
                for range in [nil, "bytes=0-187"] {
                    let answer = try await PlaybackProxyTests.get(base + segment, range: range)
                    let text = String(decoding: answer.body, as: UTF8.self)
                    #expect(answer.status >= 400 && text.contains("unsupported-protection") && text.contains(segment.hasPrefix("audio") ? "stream type 0xCF (SAMPLE-AES AAC)" : "stream type 0xDB (SAMPLE-AES H.264)"),
                            "online \(online) \(segment) \(range ?? "whole"): \(answer.status) \(text.prefix(300))")
                    #expect(!answer.body.starts(with: [0x47]), "no transport stream bytes")
                }
            }
            await proxy.stop()
        }
        #expect(rights.uses.current == 0, "a segment refused as it is made clear starts no playback window")
        let proxy = try PlaybackProxy(library: SampleAESProxyTests.Package(path: folder.appendingPathComponent("plain").path), rights: rights)
        let base = String(try await proxy.open(asset: "a").dropLast("master.m3u8".count))
        for segment in segments {
            let answer = try await PlaybackProxyTests.get(base + segment)
            #expect(answer.status == 200 && answer.body.first == 0x47 && ClearOutputCheck.protection(inTS: answer.body).isEmpty, "plain \(segment): \(answer.status)")
        }
        #expect(rights.uses.current == 1, "the first segment that plays is the one use")
        await proxy.stop()
    }

    /// The package's playlists in memory and its segments on an origin, played online.
    struct OnlineLibrary: PlaybackLibrary {
        let manifests: [String: String]
        let origin: [String: OriginFile]
        func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
            PlayableAsset(folder: nil, entry: "master.m3u8", manifests: manifests, origin: origin)
        }
    }
}
