import AsyncHTTPClient
import Foundation
import NIOCore
import SatchelAgent
import SatchelBytes
import SatchelPlayback
import SatchelProtection
import SatchelRights
import SatchelTestSupport
import SatchelSystem
import Testing

/// The proxy itself over a plain folder and fixed keys (its two seams): AES-128 decrypted as it streams, any
/// byte range of it; several sessions at once; a player that leaves mid-segment; rights that end.
@Suite struct PlaybackProxyTests {
    /// A folder as the library: every asset ID names the same folder.
    struct Folder: PlaybackLibrary {
        let path: String
        func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
            PlayableAsset(path: path, entry: "index.m3u8")
        }
    }

    /// Fixed keys, with a status that can be changed.
    final class Rights: PlaybackRights, Sendable {
        let keys: [PlaybackKey]
        private let current = Locked((status: RightsStatus.valid, changes: UInt64(0)))
        /// How often a session asked for the grant (the store's work).
        let grants = Locked(0)
        /// How often a session registered its first use (a playback window would start).
        let uses = Locked(0)
        init(_ keys: [PlaybackKey]) { self.keys = keys }
        /// The status; setting it moves the change count, as installing or releasing a license does.
        var status: RightsStatus {
            get { current.current.status }
            set { current.withLock { $0 = (newValue, $0.changes + 1) } }
        }
        var changeCount: UInt64 { current.current.changes }
        func playbackKeys(asset: String) async throws(PlaybackError) -> [PlaybackKey] {
            guard status == .valid else { throw .notPlayable(status) }
            return keys
        }
        func playbackGrant(asset: String) async throws(PlaybackError) -> PlaybackGrant {
            grants.withLock { $0 += 1 }
            return .fixed(status)
        }
        func registerUse(asset: String) async throws(PlaybackError) {
            uses.withLock { $0 += 1 }
        }
    }

    /// A folder with an AES-128 playlist of two segments: the first 1 MB + 5 bytes (more than a streaming chunk,
    /// not whole blocks), the second 3 bytes. Answers the folder and the clear segments.
    static func encryptedFolder(key: [UInt8], iv: [UInt8]) throws -> (URL, [[UInt8]]) {
        let folder = try TestMedia.temporaryDirectory("proxy")
        // One read of the kernel's randomness (a call per byte took seconds of a task-pool thread in a debug build).
        let clear = [SecureRandom.bytes((1 << 20) + 5), [1, 2, 3]]
        let cipher = try SegmentCipher(key: SecretBytes(key))
        for (index, segment) in clear.enumerated() {
            try Data(try cipher.encrypt(segment, iv: iv)).write(to: folder.appendingPathComponent("s\(index).ts"))
        }
        try """
            #EXTM3U
            #EXT-X-TARGETDURATION:4
            #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example/k",IV=0x\(Hex.encode(iv))
            #EXTINF:4,
            s0.ts
            #EXTINF:4,
            s1.ts
            #EXT-X-ENDLIST

            """.write(to: folder.appendingPathComponent("index.m3u8"), atomically: true, encoding: .utf8)
        return (folder, clear)
    }

    /// A proxy over a fresh encrypted folder with its key; answers the proxy, the folder, the clear segments and
    /// the rights (their status can be changed).
    static func serving(holdOff: Duration = .zero) throws -> (PlaybackProxy, URL, [[UInt8]], Rights) {
        let key = SecureRandom.bytes(16), iv = SecureRandom.bytes(16)
        let (folder, clear) = try encryptedFolder(key: key, iv: iv)
        let rights = Rights([PlaybackKey(keyID: "00", key: SecretBytes(key))])
        return (try PlaybackProxy(library: Folder(path: folder.path), rights: rights, configuration: .init(holdOff: holdOff)), folder, clear, rights)
    }

    static func get(_ url: String, range: String? = nil) async throws -> (status: Int, body: [UInt8], headers: [String: String]) {
        var request = HTTPClientRequest(url: url)
        if let range { request.headers.add(name: "Range", value: range) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 8 << 20)
        var headers: [String: String] = [:]
        for header in response.headers { headers[header.name.lowercased()] = header.value }
        return (Int(response.status.code), Array(body.readableBytesView), headers)
    }

    @Test("an AES-128 segment streams decrypted: whole, and any range (first byte, across blocks, across chunks, the last byte, a suffix), with the clear size from the padding; 416 past the end")
    func streamedRanges() async throws {
        let (proxy, _, clear, _) = try Self.serving()
        defer { Task { await proxy.stop() } }
        let url = try await proxy.open(asset: "a")
        let base = String(url.dropLast("index.m3u8".count))
        let playlist = try await Self.get(url)
        #expect(playlist.status == 200 && !String(decoding: playlist.body, as: UTF8.self).contains("EXT-X-KEY"))
        for (index, segment) in clear.enumerated() {
            let whole = try await Self.get(base + "s\(index).ts")
            #expect(whole.status == 200 && whole.body == segment && whole.headers["content-length"] == String(segment.count))
        }
        let big = clear[0], size = big.count
        let ranges: [(String, ClosedRange<Int>)] = [
            ("bytes=0-0", 0...0), ("bytes=15-16", 15...16), ("bytes=17-40", 17...40), ("bytes=262140-262200", 262_140...262_200),
            ("bytes=\(size - 1)-", (size - 1)...(size - 1)), ("bytes=-21", (size - 21)...(size - 1)), ("bytes=1000-\(size + 50)", 1000...(size - 1)),
        ]
        for (header, expected) in ranges {
            let part = try await Self.get(base + "s0.ts", range: header)
            #expect(part.status == 206 && part.body == Array(big[expected]), "\(header)")
            #expect(part.headers["content-range"] == "bytes \(expected.lowerBound)-\(expected.upperBound)/\(size)", "\(header)")
        }
        let tiny = try await Self.get(base + "s1.ts", range: "bytes=1-")
        #expect(tiny.status == 206 && tiny.body == [2, 3])
        let past = try await Self.get(base + "s0.ts", range: "bytes=\(size)-")
        #expect(past.status == 416)
    }

    @Test("sessions are independent: two open at once play concurrently; closing one 404s its token only; a player that leaves mid-segment leaves the proxy serving")
    func sessions() async throws {
        let (proxy, _, clear, _) = try Self.serving()
        defer { Task { await proxy.stop() } }
        let first = try await proxy.open(asset: "a"), second = try await proxy.open(asset: "b")
        let open = await proxy.openSessions
        #expect(first != second && open == 2)
        let bases = [first, second].map { String($0.dropLast("index.m3u8".count)) }
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for round in 0..<8 {
                group.addTask { try await Self.get(bases[round % 2] + "s0.ts").body == clear[0] }
            }
            for try await same in group { #expect(same) }
        }
        // A player that reads the first bytes of a segment and hangs up.
        let port = try #require(URL(string: first)?.port)
        let path = try #require(URL(string: bases[0])?.path)
        try await TestMedia.offloaded {  // a blocking socket: off the cooperative threads the proxy answers on
            for _ in 0..<3 {
                let connection = try RawConnection(port: port)
                connection.send("GET \(path)/s0.ts HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let start = connection.read(upTo: 2000)
                #expect(start.text.hasPrefix("HTTP/1.1 200"))
            }
        }
        let after = try await Self.get(bases[0] + "s0.ts")
        #expect(after.status == 200 && after.body == clear[0])
        await proxy.close(url: first)
        let closed = try await Self.get(bases[0] + "s1.ts"), other = try await Self.get(bases[1] + "s1.ts")
        #expect(closed.status == 404 && other.body == clear[1])
    }

    /// Waits until a request is being held off: the session has asked the rights source again at least twice since
    /// (the change it noticed, then a poll of the hold-off).
    static func waitUntilHeld(_ rights: Rights) async throws {
        let before = rights.grants.current
        for _ in 0..<300 where rights.grants.current < before + 2 { try await Task.sleep(for: .milliseconds(50)) }
    }

    @Test("rights are evaluated in memory: segments after the first ask the rights source nothing until its count moves")
    func rightsInMemory() async throws {
        let (proxy, _, clear, rights) = try Self.serving()
        let url = try await proxy.open(asset: "a")
        let base = String(url.dropLast("index.m3u8".count))
        let opened = rights.grants.current
        for _ in 0..<10 { #expect(try await Self.get(base + "s1.ts").body == clear[1]) }
        #expect(opened == 1 && rights.grants.current == opened, "one grant at open, none per segment")
        rights.status = .valid  // a license installed: the count moves, the next segment takes the grant again
        _ = try await Self.get(base + "s1.ts")
        #expect(rights.grants.current == opened + 1)
        await proxy.stop()
    }

    @Test("rights ending mid-play hold the player off: the request waits and is answered as soon as a renewal arrives; the notice goes out once per end and is armed again by a valid license")
    func holdOff() async throws {
        let (proxy, _, clear, rights) = try Self.serving(holdOff: .seconds(20))
        let url = try await proxy.open(asset: "a")
        let base = String(url.dropLast("index.m3u8".count))
        #expect(try await Self.get(base + "s1.ts").body == clear[1])
        rights.status = .expired
        let clock = ContinuousClock()
        let started = clock.now
        async let held = Self.get(base + "s1.ts")
        try await Self.waitUntilHeld(rights)
        rights.status = .valid  // a renewal installed while the player waits
        let answered = try await held
        let waited = started.duration(to: clock.now)
        #expect(answered.status == 200 && answered.body == clear[1], "answered once the rights were valid again")
        #expect(waited >= .milliseconds(250) && waited < .seconds(19), "held, then answered before the hold-off ran out: \(waited)")
        // A second end is announced again (the notice was armed again by the valid license); with no renewal the
        // request is refused at the end of the hold-off.
        let (quick, _, _, quickRights) = try Self.serving(holdOff: .milliseconds(600))
        let quickURL = try await quick.open(asset: "a")
        let quickBase = String(quickURL.dropLast("index.m3u8".count))
        quickRights.status = .expired
        let refusedAfter = clock.now
        #expect(try await Self.get(quickBase + "s0.ts").status == 403)
        #expect(refusedAfter.duration(to: clock.now) >= .milliseconds(500), "held off before it was refused")
        await quick.stop()
        rights.status = .expired
        async let second = Self.get(base + "s0.ts")
        try await Self.waitUntilHeld(rights)
        rights.status = .valid
        #expect(try await second.status == 200)
        await proxy.stop()
        var events: [PlaybackEvent] = []
        for await event in proxy.events { events.append(event) }
        #expect(events.filter { if case .rightsExpired = $0 { true } else { false } }.count == 2, "once per end: \(events)")
    }

    @Test("rights ending mid-play: the next segment is refused with the status and rightsExpired goes out once; playlists still answer")
    func rightsEnd() async throws {
        let (proxy, folder, _, rights) = try Self.serving()
        let url = try await proxy.open(asset: "a")
        let base = String(url.dropLast("index.m3u8".count))
        let before = try await Self.get(base + "s1.ts")
        rights.status = .expired
        let refused = try await Self.get(base + "s1.ts"), again = try await Self.get(base + "s0.ts"), playlist = try await Self.get(url)
        #expect(before.status == 200 && refused.status == 403 && again.status == 403 && playlist.status == 200)
        await proxy.stop()
        var events: [PlaybackEvent] = []
        for await event in proxy.events { events.append(event) }
        #expect(events.filter { if case .rightsExpired = $0 { true } else { false } }.count == 1, "\(events)")
        await #expect(throws: PlaybackError.notPlayable(.expired)) {
            let again = try PlaybackProxy(library: Folder(path: folder.path), rights: rights)
            _ = try await again.open(asset: "a")
        }
    }
}
