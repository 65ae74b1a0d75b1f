import Foundation
import Logging
import SatchelRights
import SatchelAgent
import SatchelBytes
import SatchelPlayback
import SatchelProtection
import SatchelTestSupport
import SatchelSystem
import Testing

/// The proxy and the origin: files not on disk come from it (decrypted, or passed on as they arrive) and are
/// kept only when whole; its errors reach the player and the events (seed 000 §5.4) with their frequencies.
@Suite struct OriginFillTests {
    /// The encrypted folder of ``PlaybackProxyTests`` with `s0.ts` (1 MB) moved to an origin; files fetched for the
    /// player are kept in the folder by `fill`.
    struct PartlyCached: PlaybackLibrary {
        let folder: String
        let origin: String
        let keeps: Bool
        func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
            let folder = folder
            var fill: (@Sendable (String, [UInt8]) async -> String?)?
            if keeps {
                fill = { path, bytes in FileManager.default.createFile(atPath: folder + "/" + path, contents: Data(bytes)) ? nil : "not written" }
            }
            return PlayableAsset(folder: try? ConfinedFolder.openIfPresent(folder), entry: "index.m3u8", origin: ["s0.ts": OriginFile(url: origin + "/s0.ts"),
                                                                                 "piece.bin": OriginFile(url: origin + "/s0.ts", range: 16...47)], fill: fill,
                                 cache: CacheState(cachedDuration: 4, totalDuration: 8, isReadyToPlay: false))
        }
    }

    /// A proxy in `mode` over an encrypted folder whose `s0.ts` is only on a test origin.
    static func partlyCached(mode: PlaybackMode, keeps: Bool = true,
                             logger: Logger = Logger(label: "satchel.playback")) async throws -> (PlaybackProxy, URL, TestOrigin, [[UInt8]], stored: [UInt8]) {
        let key = SecureRandom.bytes(16), iv = SecureRandom.bytes(16)
        let (folder, clear) = try PlaybackProxyTests.encryptedFolder(key: key, iv: iv)
        let site = try TestMedia.temporaryDirectory("origin")
        let stored = try await TestMedia.contents(of: folder.appendingPathComponent("s0.ts"))
        try FileManager.default.moveItem(at: folder.appendingPathComponent("s0.ts"), to: site.appendingPathComponent("s0.ts"))
        let origin = try await TestOrigin.start(root: site)
        let proxy = try PlaybackProxy(library: PartlyCached(folder: folder.path, origin: origin.baseURL, keeps: keeps),
                                      rights: PlaybackProxyTests.Rights([PlaybackKey(keyID: "00", key: SecretBytes(key))]),
                                      configuration: .init(mode: mode), logger: logger)
        return (proxy, folder, origin, clear, Array(stored))
    }

    /// Waits (up to 10 s) for the proxy to have kept `file`: it keeps a file once it has sent the file's last byte,
    /// which a client that has the length may read before then.
    static func waitUntilKept(_ file: URL) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !FileManager.default.fileExists(atPath: file.path), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
    }

    static func events(_ proxy: PlaybackProxy) async -> [PlaybackEvent] {
        await proxy.stop()
        var events: [PlaybackEvent] = []
        for await event in proxy.events { events.append(event) }
        return events
    }

    @Test("a segment not on disk comes from the origin: decrypted for the player, kept in the store as the origin sent it; passed through as it arrives in pass-through mode; opened carries the cache state")
    func fetchedAndKept() async throws {
        for mode in PlaybackMode.allCases {
            let (proxy, folder, origin, clear, stored) = try await Self.partlyCached(mode: mode)
            defer { origin.stop() }
            let url = try await proxy.open(asset: "a")
            let base = String(url.dropLast("index.m3u8".count))
            let answer = try await PlaybackProxyTests.get(base + "s0.ts")
            #expect(answer.status == 200 && answer.body == (mode == .decrypt ? clear[0] : stored), "\(mode)")
            try await Self.waitUntilKept(folder.appendingPathComponent("s0.ts"))
            let kept = try await TestMedia.contents(of: folder.appendingPathComponent("s0.ts"))
            #expect(Array(kept) == stored, "\(mode): the store holds the file as the origin sent it")
            let again = try await PlaybackProxyTests.get(base + "s0.ts")
            #expect(again.body == answer.body && origin.log.count == 1, "\(mode): the second read comes from disk")
            // A file that is a byte range of an origin URL (EXT-X-BYTERANGE, SegmentBase): asked for with Range.
            let piece = try await PlaybackProxyTests.get(base + "piece.bin")
            #expect(piece.status == 200 && piece.body == Array(stored[16...47]) && origin.log.last?.range == "bytes=16-47", "\(mode)")
            let events = await Self.events(proxy)
            #expect(events.first == .opened(asset: "a", cache: CacheState(cachedDuration: 4, totalDuration: 8, isReadyToPlay: false)))
            #expect(events.first?.line == "opened: a (cached 4.0 s of 8.0 s, not ready to play offline)")
        }
    }

    /// Seed 000 §5.7: "Each request made by the player to the Agent's internal content proxy, including the time taken
    /// to download the requested file from the content server, the time taken to decrypt and deliver the content to
    /// the player and … the network throughput."
    @Test("each request's log line splits its time: the origin's (with its throughput) and the decryption's; a file on disk spends none at the origin, pass-through none decrypting; no session token")
    func requestTimes() async throws {
        for mode in PlaybackMode.allCases {
            let lines = Locked<[String]>([])
            var logger = Logger(label: "satchel.playback") { _ in CapturingHandler(lines: lines) }
            logger.logLevel = .debug
            let (proxy, folder, origin, _, stored) = try await Self.partlyCached(mode: mode, logger: logger)
            defer { origin.stop() }
            let url = try await proxy.open(asset: "a")
            let base = String(url.dropLast("index.m3u8".count))
            let token = try #require(url.split(separator: "/").dropLast().last.map(String.init))
            #expect(try await PlaybackProxyTests.get(base + "s0.ts").status == 200)
            try await Self.waitUntilKept(folder.appendingPathComponent("s0.ts"))
            #expect(try await PlaybackProxyTests.get(base + "s0.ts").status == 200)
            await proxy.stop()
            let served = lines.current.filter { $0.hasPrefix("served ") && $0.contains("path=s0.ts") }
            #expect(served.count == 2, "\(mode): \(lines.current)")
            guard served.count == 2 else { continue }
            func field(_ line: String, _ name: String) -> Double? {
                line.split(separator: " ").first { $0.hasPrefix(name + "=") }.flatMap { Double($0.dropFirst(name.count + 1)) }
            }
            let (fetched, local) = (served[0], served[1])
            #expect((field(fetched, "origin-ms") ?? 0) > 0 && field(fetched, "origin-bytes") == Double(stored.count) && (field(fetched, "origin-kbps") ?? 0) > 0,
                    "\(mode): from the origin: \(fetched)")
            #expect(field(local, "origin-ms") == 0 && field(local, "origin-kbps") == nil, "\(mode): from disk: \(local)")
            for line in served {
                #expect((field(line, "ms") ?? 0) >= (field(line, "origin-ms") ?? 0) + (field(line, "decrypt-ms") ?? 0))
                #expect(mode == .decrypt ? (field(line, "decrypt-ms") ?? 0) > 0 : field(line, "decrypt-ms") == 0, "\(mode): \(line)")
            }
            #expect(!lines.current.contains { $0.contains(token) }, "the session token is never logged")
        }
    }

    @Test("the origin's errors: its status is forwarded (404, 500) with a server-error event; an origin that is down or cuts the file short answers 503 and nothing is kept; a byte range of a file not on disk is served from it whole")
    func originErrors() async throws {
        let (proxy, folder, origin, _, stored) = try await Self.partlyCached(mode: .passthrough)
        let url = try await proxy.open(asset: "a")
        let base = String(url.dropLast("index.m3u8".count))
        for status in [404, 500] {
            origin.inject(.status(status), on: "s0.ts")
            let answer = try await PlaybackProxyTests.get(base + "s0.ts")
            #expect(answer.status == status)
        }
        // Cut short while it streams: the player's answer ends early, nothing is kept.
        origin.inject(.reset(after: 4096), on: "s0.ts")
        let cut = try? await PlaybackProxyTests.get(base + "s0.ts")
        #expect(cut.map { $0.body.count < stored.count } ?? true)
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("s0.ts").path), "a file cut short is not kept")
        let part = try await PlaybackProxyTests.get(base + "s0.ts", range: "bytes=1048570-1048580")
        #expect(part.status == 206 && part.body == Array(stored[1_048_570...1_048_580]))
        try FileManager.default.removeItem(at: folder.appendingPathComponent("s0.ts"))
        origin.stop()
        let down = try await PlaybackProxyTests.get(base + "s0.ts")
        #expect(down.status == 503)
        let events = await Self.events(proxy)
        let errors = events.compactMap { event -> Int? in
            if case let .serverError(_, path, status, _, _) = event, path == "s0.ts" { return status ?? 503 }
            return nil
        }
        #expect(errors == [404, 500, 503, 503], "\(events)")
        #expect(events.contains(.willAbort(asset: "a", reason: "the playback proxy is stopping")))
    }

    @Test("a listed segment neither on disk nor on an origin answers 503 at once with not-cached")
    func notCached() async throws {
        let (proxy, folder, _, _) = try PlaybackProxyTests.serving()
        try FileManager.default.removeItem(at: folder.appendingPathComponent("s1.ts"))
        let url = try await proxy.open(asset: "a")
        let answer = try await PlaybackProxyTests.get(String(url.dropLast("index.m3u8".count)) + "s1.ts")
        #expect(answer.status == 503)
        let events = await Self.events(proxy)
        #expect(events.contains(.notCached(asset: "a", path: "s1.ts")), "\(events)")
    }

    @Test("invalid content is reported once, and again only after a file has played well; a key the license does not hold is should-abort (403), every time")
    func eventFrequencies() async throws {
        let (proxy, folder, _, _) = try PlaybackProxyTests.serving()
        try Data(repeating: 7, count: 100).write(to: folder.appendingPathComponent("bad.ts"))  // not whole AES blocks
        let playlist = folder.appendingPathComponent("index.m3u8")
        let text = try String(contentsOf: playlist, encoding: .utf8).replacingOccurrences(of: "s1.ts", with: "bad.ts\n#EXTINF:4,\ns1.ts")
        try text.write(to: playlist, atomically: true, encoding: .utf8)
        let url = try await proxy.open(asset: "a")
        let base = String(url.dropLast("index.m3u8".count))
        for name in ["bad.ts", "bad.ts", "s1.ts", "bad.ts"] { _ = try await PlaybackProxyTests.get(base + name) }
        let events = await Self.events(proxy)
        let invalid = events.filter { if case .invalidContent = $0 { true } else { false } }
        #expect(invalid.count == 2, "once, then again after s1.ts decrypted well: \(events)")

        // Two keys, and the key tag names neither: the content is protected with a key the license lacks.
        let key = SecureRandom.bytes(16)
        let (folder2, _) = try PlaybackProxyTests.encryptedFolder(key: key, iv: SecureRandom.bytes(16))
        let rights = PlaybackProxyTests.Rights([PlaybackKey(keyID: "11", key: SecretBytes(key)), PlaybackKey(keyID: "22", key: SecretBytes(key))])
        let lacking = try PlaybackProxy(library: PlaybackProxyTests.Folder(path: folder2.path), rights: rights)
        let lackingURL = try await lacking.open(asset: "b")
        for _ in 0..<2 {
            let refused = try await PlaybackProxyTests.get(String(lackingURL.dropLast("index.m3u8".count)) + "s1.ts")
            #expect(refused.status == 403 && String(decoding: refused.body, as: UTF8.self).contains("no-key"))
        }
        let lackingEvents = await Self.events(lacking)
        #expect(lackingEvents.filter { if case .shouldAbort = $0 { true } else { false } }.count == 2, "\(lackingEvents)")
    }
}
