import Foundation
import SatchelBytes
import SatchelMedia
import SatchelPackager
import SatchelPlayback
import SatchelProtection
import SatchelRights
import SatchelTestSupport
import Testing

/// SAMPLE-AES MPEG-TS through the proxy, both ways it is made clear: whole, where it was read (sent with its length),
/// or, longer than the proxy keeps in memory, PES packet by PES packet as it streams (sent chunked).
@Suite struct SampleAESProxyTests {
    /// A packaged asset's folder as the library.
    struct Package: PlaybackLibrary {
        let path: String
        func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
            PlayableAsset(path: path, entry: "master.m3u8")
        }
    }

    @Test("whole or streamed (a segment longer than the proxy keeps in memory), a segment is the clear package's, to ffmpeg packet for packet across the segments (counters go on); a segment damaged past the first read is refused whole, or ends short streamed, with invalid-content")
    func wholeOrStreamed() async throws {
        let folder = try TestMedia.temporaryDirectory("proxy-sample-aes")
        let key = try ContentKey(keyID: KeyID(hex: "0123456789abcdef0123456789abcdef"), key: SecretBytes(SecureRandom.bytes(16)),
                                 iv: SecureRandom.bytes(16))
        try await TestMedia.offloaded {
            // 1280x720: video segments of several hundred KB, over the streamed run's memory and its first read (188 KB).
            let input = try TestMedia.make("proxy-sample-aes-720p", seconds: 4, size: "1280x720")
            for (name, scheme) in [("clear", PackageScheme.clear), ("protected", .sampleAES)] {
                _ = try Packager(options: PackageOptions(inputs: [input.path], output: folder.appendingPathComponent(name).path, format: .hlsTS,
                                                         scheme: scheme, key: scheme == .clear ? nil : key, segmentDuration: 2)).run()
            }
        }
        let protected = folder.appendingPathComponent("protected")
        let segment = try #require(TestMedia.files(under: protected).filter { $0.hasSuffix(".ts") }.max {
            (try? FileManager.default.attributesOfItem(atPath: protected.appendingPathComponent($0).path)[.size] as? Int ?? 0) ?? 0
                < (try? FileManager.default.attributesOfItem(atPath: protected.appendingPathComponent($1).path)[.size] as? Int ?? 0) ?? 0
        })
        let stored = try TestMedia.bytes(protected.appendingPathComponent(segment))
        #expect(stored.count > 2 * 188 * 1024, "\(segment): \(stored.count) bytes")
        let clear = try TestMedia.bytes(folder.appendingPathComponent("clear").appendingPathComponent(segment))
        let expected = try await TestMedia.offloaded { try TestMedia.packetHashes(folder.appendingPathComponent("clear/master.m3u8").path) }
        let rights = PlaybackProxyTests.Rights([PlaybackKey(keyID: key.keyID.hex, key: key.key, iv: key.iv)])

        for streamed in [false, true] {
            try Data(stored).write(to: protected.appendingPathComponent(segment))
            let proxy = try PlaybackProxy(library: Package(path: protected.path), rights: rights,
                                          configuration: .init(transportInMemory: streamed ? 256 << 10 : 16 << 20))
            let url = try await proxy.open(asset: "a")
            let base = String(url.dropLast("master.m3u8".count))
            let played = try await TestMedia.offloaded { try TestMedia.packetHashes(url) }
            #expect(!expected.isEmpty && played == expected, "streamed \(streamed): \(played.count) packets vs \(expected.count)")
            let whole = try await PlaybackProxyTests.get(base + segment)
            #expect(whole.status == 200, "streamed \(streamed)")
            if streamed {
                #expect(whole.headers["transfer-encoding"] == "chunked" && whole.headers["content-length"] == nil, "\(whole.headers)")
            } else {
                #expect(whole.headers["content-length"] == String(whole.body.count), "\(whole.headers)")
            }
            #expect(try TSDemuxer.demux(whole.body).map { $0.samples.map { Array($0.data) } } == TSDemuxer.demux(clear).map { $0.samples.map { Array($0.data) } })
            let ranged = try await PlaybackProxyTests.get(base + segment, range: "bytes=188-375")
            #expect(ranged.status == 206 && ranged.headers["content-range"] == "bytes 188-375/\(whole.body.count)" && ranged.body == Array(whole.body[188...375]))

            // Damaged past the first read: no sync bytes from 206 KB on.
            var damaged = stored
            for index in stride(from: 1100 * 188, to: damaged.count, by: 188) { damaged[index] = 0 }
            try Data(damaged).write(to: protected.appendingPathComponent(segment))
            if streamed {
                // The answer has begun: it ends short.
                let cut = try? await PlaybackProxyTests.get(base + segment)
                #expect(cut.map { $0.body.count < stored.count - 100 * 1024 } ?? true, "\(cut?.body.count ?? 0) bytes")
            } else {
                let refused = try await PlaybackProxyTests.get(base + segment)
                #expect(refused.status == 502, "\(refused.status)")
            }
            await proxy.stop()
            var events: [PlaybackEvent] = []
            for await event in proxy.events { events.append(event) }
            #expect(events.contains { if case let .invalidContent(_, path, _) = $0 { path == segment } else { false } }, "streamed \(streamed): \(events)")
        }
    }
}
