import Foundation
import SatchelStreams
import SatchelAgent
import SatchelBytes
import SatchelMedia
import SatchelTestSupport
import Testing

/// `satchel play`: the playback proxy over a real download store, with the origin and the license server
/// stopped, read by ffmpeg; every packet must equal the clear package's.
@Suite(.serialized) struct PlayCommandTests {
    /// A `satchel play` process: its first stdout line is the session URL.
    /// Runs `satchel play ARGUMENTS`, reads the session's URL with `read` and expects `expected` (`label` names the
    /// case); returns what the proxy wrote to stderr, which never holds `token`.
    @discardableResult
    static func plays(_ arguments: [String], token: String? = nil, expected: [String], label: String,
                      read: @escaping @Sendable (String) throws -> [String]) async throws -> String {
        let player = try await TestMedia.offloaded { try Player(arguments) }
        try await TestMedia.offloaded { () throws -> Void in
            let played = try read(player.url)
            #expect(played == expected, "\(label): \(played.count) packets vs \(expected.count)")
        }
        let stopped = try await TestMedia.offloaded { player.stop() }
        if let token { #expect(!stopped.stderr.contains(token), "\(label): the token reached stderr") }
        return stopped.stderr
    }

    final class Player: @unchecked Sendable {
        let process = Process()
        let url: String
        let stderr: Pipe

        /// `satchel play ARGUMENTS`; with `clockFile`, under libfaketime reading its offset from that file at every
        /// clock read (the faketime wrapper's own FAKETIME would win over the file, so `env` removes it).
        init(_ arguments: [String], clockFile: String? = nil) throws {
            let binary = try #require(CLIRunner.binary)
            if let clockFile {
                process.executableURL = URL(fileURLWithPath: "/usr/bin/faketime")
                process.arguments = ["-f", "+0", "/usr/bin/env", "-u", "FAKETIME", "FAKETIME_TIMESTAMP_FILE=\(clockFile)", "FAKETIME_NO_CACHE=1",
                                     binary.path, "play"] + arguments
            } else {
                process.executableURL = binary
                process.arguments = ["play"] + arguments
            }
            let output = Pipe()
            stderr = Pipe()
            process.standardOutput = output
            process.standardError = stderr
            try process.run()
            var line = [UInt8]()
            while let byte = try output.fileHandleForReading.read(upToCount: 1)?.first, byte != UInt8(ascii: "\n") { line.append(byte) }
            url = String(decoding: line, as: UTF8.self)
        }

        /// Interrupts the proxy; answers its exit status and stderr.
        func stop() -> (status: Int32, stderr: String) {
            // Under the faketime wrapper the proxy is its child: interrupt the child (the wrapper then exits with it).
            // Its children as Linux lists them (no `pkill` started and waited for).
            let pid = process.processIdentifier
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            for child in children.split(separator: " ").compactMap({ Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) { kill(child, SIGINT) }
            process.interrupt()
            process.waitUntilExit()
            let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            return (process.terminationStatus, text)
        }
    }

    /// A license server, an origin serving `site` (empty), a 4 s input made with ffmpeg, and the device's data
    /// directory: what every play test starts from.
    static func stage(_ name: String) async throws -> (server: AgentCommandTests.Server, origin: TestOrigin, site: URL, input: URL, data: String) {
        try TestMedia.require("ffmpeg")
        let server = try await AgentCommandTests.Server(name)
        try await server.start()
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let input = try await TestMedia.offloaded { try TestMedia.make(name, seconds: 4) }
        let origin = try await TestOrigin.start(root: site)
        return (server, origin, site, input, server.directory.appendingPathComponent("device").path)
    }

    /// Packages `input` into `out` as `format` with 2 s segments; with `scheme`, its key is registered for asset
    /// `asset` in `server`'s store (`offline`: persistent licenses allowed).
    static func package(_ input: URL, _ more: URL..., into out: URL, format: String, scheme: String? = nil, asset: String? = nil,
                        server: AgentCommandTests.Server? = nil, offline: Bool = false, policy: [String] = [], drm: String? = nil) throws {
        var arguments = ["package", input.path] + more.map(\.path) + ["--out", out.path, "--format", format, "--segment-duration", "2"]
        if let drm { arguments += ["--drm", drm] }
        if let scheme { arguments += ["--scheme", scheme] }
        if let asset, let server { arguments += ["--register", "--asset-id", asset, "--data-dir", server.data] + (offline ? ["--offline"] : []) + policy }
        let packaged = try CLIRunner.run(arguments)
        #expect(packaged.status == 0, "\(out.lastPathComponent): \(packaged.stderr)")
    }

    /// Packages `input` as the clear TS package `site/clear` and as `scheme` in `format` at `site/id` (its key
    /// registered for asset `id`, offline allowed), then downloads `site/id/entry` with a persistent license.
    static func packageAndDownload(_ input: URL, clear: String, id: String, format: String, scheme: String, entry: String,
                                   site: URL, origin: TestOrigin, server: AgentCommandTests.Server, data: String) throws {
        try package(input, into: site.appendingPathComponent(clear), format: "hls-ts")
        try package(input, into: site.appendingPathComponent(id), format: format, scheme: scheme, asset: id, server: server, offline: true)
        try download(origin.url("\(id)/\(entry)"), id: id, server: server, data: data)
    }

    /// Registers the device with `server`, adds `url` as asset `id` with a persistent license, and downloads it.
    static func download(_ url: String, id: String, server: AgentCommandTests.Server, data: String) throws {
        let token = try server.token()
        #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
        #expect(try CLIRunner.run(["download", "add", url, "--data-dir", data, "--id", id, "--license", "--token", token]).status == 0)
        let run = try CLIRunner.run(["download", "run", "--data-dir", data])
        #expect(run.status == 0, "\(run.stderr)")
    }

    /// One GET with curl, binary-safe: status, body, headers (names lowercased).
    static func fetch(_ url: String, range: String? = nil) throws -> (status: Int, body: [UInt8], headers: [String: String]) {
        let answer = try OriginCommandTests.request(url, headers: range.map { ["Range: \($0)"] } ?? [])
        return (answer.status, answer.body, answer.headers)
    }

    @Test("AES-128 HLS downloaded with a license plays offline through the proxy: ffmpeg reads the clear packets, the playlist has no key tag; bad tokens get 404, ranges 206; rights ending mid-play stop the segments (event once); --passthrough keeps the protection; a missing segment is 503; logs redact the token; without rights it does not open")
    func aes128Offline() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded {
            let clear = site.appendingPathComponent("clear")
            #expect(try CLIRunner.run(["package", input.path, "--out", clear.path, "--format", "hls-ts", "--segment-duration", "2"]).status == 0)
            let packaged = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("aes").path, "--format", "hls-ts",
                                              "--segment-duration", "2", "--scheme", "aes-128", "--key-uri", server.url + "/keys/{kid}",
                                              "--register", "--asset-id", "aes", "--data-dir", server.data, "--offline",
                                              "--not-after", ISO8601DateFormatter().string(from: Date().addingTimeInterval(86_400))])
            #expect(packaged.status == 0, "\(packaged.stderr)")
            try Self.download(origin.url("aes/master.m3u8"), id: "aes", server: server, data: data)
        }
        origin.stop()
        server.stop()  // offline from here on

        let logFile = server.directory.appendingPathComponent("play.log").path
        let player = try await TestMedia.offloaded { try Player(["aes", "--data-dir", data, "--log-level", "debug", "--log-file", logFile]) }
        #expect(player.url.hasPrefix("http://127.0.0.1:") && player.url.hasSuffix("/master.m3u8"), "\(player.url)")
        try await TestMedia.offloaded {
            let expected = try TestMedia.packetHashes(site.appendingPathComponent("clear/master.m3u8").path)
            let played = try TestMedia.packetHashes(player.url)
            #expect(!expected.isEmpty && played == expected, "\(played.count) packets vs \(expected.count)")

            let base = String(player.url.dropLast("master.m3u8".count))
            let master = try Self.fetch(player.url)
            #expect(master.status == 200 && master.headers["content-type"] == "application/vnd.apple.mpegurl")
            let mediaName = try #require(String(decoding: master.body, as: UTF8.self).split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let media = try Self.fetch(base + mediaName)
            let mediaText = String(decoding: media.body, as: UTF8.self)
            #expect(media.status == 200 && mediaText.contains("#EXTINF") && !mediaText.contains("EXT-X-KEY"), "\(mediaText)")
            let segmentName = try #require(mediaText.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let segmentURL = URL(string: base + mediaName)!.deletingLastPathComponent().appendingPathComponent(String(segmentName)).absoluteString
            let whole = try Self.fetch(segmentURL)
            #expect(whole.status == 200 && whole.headers["content-type"] == "video/mp2t" && whole.body.first == 0x47)
            let part = try Self.fetch(segmentURL, range: "bytes=188-375")
            #expect(part.status == 206 && part.body == Array(whole.body[188...375]) && part.headers["content-range"] == "bytes 188-375/\(whole.body.count)")
            #expect(try Self.fetch(segmentURL, range: "bytes=99999999-").status == 416)

            // Another token, no token, a path out of the folder: 404 that says nothing.
            let port = try #require(URL(string: player.url)?.port)
            for path in ["/\(Base64URL.encode(SecureRandom.bytes(32)))/master.m3u8", "/master.m3u8", "/", "/\(base.split(separator: "/").last ?? "")/../downloads.sqlite"] {
                let answer = try Self.fetch("http://127.0.0.1:\(port)\(path)")
                #expect(answer.status == 404, "\(path): \(answer.status) \(String(decoding: answer.body, as: UTF8.self))")
            }
        }
        let stopped = try await TestMedia.offloaded { player.stop() }
        #expect(stopped.status == 0 && stopped.stderr.contains("satchel: event: opened: aes"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains(player.url.split(separator: "/")[2]), "the session token stays out of stderr")
        let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        #expect(log.contains("/<session>/") && !log.contains(player.url.split(separator: "/")[2]), "request lines are logged with the token redacted: \(log.prefix(600))")

        // --passthrough: the key tags stay and segments go out as stored (encrypted); a listed segment missing from
        // the store answers 503 with an event, at once.
        let passing = try await TestMedia.offloaded { try Player(["aes", "--data-dir", data, "--passthrough"]) }
        try await TestMedia.offloaded {
            let master = String(decoding: try Self.fetch(passing.url).body, as: UTF8.self)
            let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: passing.url))).absoluteURL
            let media = String(decoding: try Self.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            #expect(media.contains("#EXT-X-KEY:METHOD=AES-128"), "\(media)")
            let segments = media.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
            let stored = try #require(segments.first)
            let served = try Self.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(stored).absoluteString)
            // A session path is the file's path in the asset's folder.
            let local = URL(fileURLWithPath: data).appendingPathComponent("assets/aes")
            func onDiskPath(_ name: String) -> URL {
                let path = mediaURL.deletingLastPathComponent().appendingPathComponent(name).path.split(separator: "/").dropFirst().joined(separator: "/")
                return local.appendingPathComponent(path)
            }
            let onDisk = onDiskPath(stored)
            let storedBytes = Array(try Data(contentsOf: onDisk))
            #expect(served.status == 200 && served.body == storedBytes && served.body.first != 0x47)
            let last = try #require(segments.last)
            let lastOnDisk = onDiskPath(last)
            let kept = try Data(contentsOf: lastOnDisk)
            try FileManager.default.removeItem(at: lastOnDisk)
            let missing = try Self.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(last).absoluteString)
            // The origin is down: 503 (the player asks again) and a server-error event.
            #expect(missing.status == 503)
            try kept.write(to: lastOnDisk)
        }
        let passed = try await TestMedia.offloaded { passing.stop() }
        #expect(passed.stderr.contains("server-error: aes/") && passed.stderr.contains("(answered 503)"), "\(passed.stderr)")
        #expect(passed.stderr.contains("will-abort: aes: the playback proxy is stopping"), "\(passed.stderr)")

        try await TestMedia.offloaded {
            // --exec: the command's status is the exit status; the URL replaces {url}.
            let out = server.directory.appendingPathComponent("fetched.m3u8").path
            let fetched = try CLIRunner.run(["play", "aes", "--data-dir", data, "--exec", "curl -sf {url} -o \(out)"])
            #expect(fetched.status == 0 && FileManager.default.fileExists(atPath: out), "\(fetched.stderr)")
            #expect(try CLIRunner.run(["play", "aes", "--data-dir", data, "--exec", "sh -c 'exit 3'"]).status == 3)
            let unknown = try CLIRunner.run(["play", "nothing", "--data-dir", data])
            #expect(unknown.status != 0 && unknown.stderr.contains("nothing"))
        }
        // Rights ending mid-play: the proxy runs on a clock read from a file (libfaketime); two days on, the
        // license's end has passed: the next segment is refused with the status, the event goes out once.
        let clockFile = server.directory.appendingPathComponent("faketime").path
        try "+0".write(toFile: clockFile, atomically: true, encoding: .utf8)
        do {
            try TestMedia.require("faketime")
            let timed = try await TestMedia.offloaded { try Player(["aes", "--data-dir", data, "--hold-off", "0.5"], clockFile: clockFile) }
            try await TestMedia.offloaded {
                let master = String(decoding: try Self.fetch(timed.url).body, as: UTF8.self)
                let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty }, "url \(timed.url) master \(master)")
                let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: timed.url))).absoluteURL
                let base = mediaURL.deletingLastPathComponent()
                let media = String(decoding: try Self.fetch(mediaURL.absoluteString).body, as: UTF8.self)
                let segments = media.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
                #expect(segments.count >= 2, "\(media)")
                #expect(try Self.fetch(base.appendingPathComponent(segments[0]).absoluteString).status == 200)
                try "+2d".write(toFile: clockFile, atomically: true, encoding: .utf8)
                let refused = try Self.fetch(base.appendingPathComponent(segments[1]).absoluteString)
                #expect(refused.status == 403 && String(decoding: refused.body, as: UTF8.self).contains("expired"), "\(refused.status)")
                #expect(try Self.fetch(base.appendingPathComponent(segments[0]).absoluteString).status == 403)
            }
            let ended = try await TestMedia.offloaded { timed.stop() }
            #expect(ended.stderr.components(separatedBy: "rights-expired: aes (expired)").count == 2, "once: \(ended.stderr)")
        }

        try await TestMedia.offloaded {
            // Without a license (released: owed to the server, deleted here at once) the session does not open: with the
            // backplane out of reach, no stream slot is taken without an offline license, so that is the refusal.
            #expect(try CLIRunner.run(["license", "release", "aes", "--data-dir", data]).status == 0)
            let refused = try CLIRunner.run(["play", "aes", "--data-dir", data])
            #expect(refused.status != 0 && (refused.stderr.contains("no-rights") || refused.stderr.contains("no stream slot")) && refused.stdout.isEmpty,
                    "\(refused.stderr)")
        }
    }

    @Test("every scheme plays decrypted through the proxy, offline: SAMPLE-AES MPEG-TS, CMAF cbcs and cenc (init segments without sinf/pssh, fragments without senc/saiz/saio), multi-DRM cbcs (Clear Key, PlayReady, Widevine and FairPlay signalled) and cenc for Widevine and PlayReady alone (no Clear Key signalling: the keys come from Satchel's license all the same); ffmpeg reads the packets of the clear package; a corrupt segment is invalid-content")
    func everyScheme() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play-schemes")
        defer { server.stop(); origin.stop() }
        // (asset ID, scheme, format, the DRM systems signalled)
        let cases = [("sample-aes", "sample-aes", "hls-ts", [String]()), ("cbcs", "cbcs", "cmaf", []), ("cenc", "cenc", "cmaf", []),
                     ("cbcs-multi", "cbcs", "cmaf", ["--drm", "clearkey,playready,widevine,fairplay"]),
                     ("cenc-vendors", "cenc", "cmaf", ["--drm", "widevine,playready"])]
        try await TestMedia.offloaded {
            for format in ["hls-ts", "cmaf"] {
                let packaged = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear-\(format)").path, "--format", format,
                                                  "--segment-duration", "2"])
                #expect(packaged.status == 0, "\(packaged.stderr)")
            }
            let token = try server.token()
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            for (id, scheme, format, drm) in cases {
                let packaged = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent(id).path, "--format", format,
                                                  "--segment-duration", "2", "--scheme", scheme, "--register", "--asset-id", id,
                                                  "--data-dir", server.data, "--offline"] + drm)
                #expect(packaged.status == 0, "\(id): \(packaged.stderr)")
                #expect(try CLIRunner.run(["download", "add", origin.url("\(id)/master.m3u8"), "--data-dir", data, "--id", id,
                                           "--license", "--token", token]).status == 0)
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stderr)")
        }
        origin.stop()
        server.stop()  // offline from here on

        for (scheme, _, format, _) in cases {
            let player = try await TestMedia.offloaded { try Player([scheme, "--data-dir", data]) }
            try await TestMedia.offloaded {
                let expected = try TestMedia.packetHashes(site.appendingPathComponent("clear-\(format)/master.m3u8").path)
                let played = try TestMedia.packetHashes(player.url)
                #expect(!expected.isEmpty && played == expected, "\(scheme): \(played.count) packets vs \(expected.count)")
                guard format == "cmaf" else { return }
                // The init segment and a fragment as served: no protection boxes left.
                let master = String(decoding: try Self.fetch(player.url).body, as: UTF8.self)
                let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
                let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: player.url))).absoluteURL
                let media = String(decoding: try Self.fetch(mediaURL.absoluteString).body, as: UTF8.self)
                #expect(!media.contains("EXT-X-KEY") && media.contains("EXT-X-MAP"), "\(media)")
                let initName = try #require(media.components(separatedBy: "URI=\"").dropFirst().first?.prefix { $0 != "\"" })
                let initSegment = try Self.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(String(initName)).absoluteString)
                let fragmentName = try #require(media.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
                let fragment = try Self.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(String(fragmentName)).absoluteString)
                #expect(initSegment.status == 200 && fragment.status == 200)
                for box in ["sinf", "pssh", "encv", "enca", "tenc"] {
                    #expect(!Self.contains(initSegment.body, box), "\(scheme): the init segment still has '\(box)'")
                }
                for box in ["senc", "saiz", "saio"] {
                    #expect(!Self.contains(fragment.body, box), "\(scheme): the fragment still has '\(box)'")
                }
            }
            let stopped = try await TestMedia.offloaded { player.stop() }
            #expect(stopped.status == 0, "\(scheme): \(stopped.stderr)")
        }

        // A segment damaged on disk: the request fails, an invalid-content event names it.
        let local = URL(fileURLWithPath: data).appendingPathComponent("assets/sample-aes")
        let damaged = try #require(TestMedia.files(under: local).first { $0.hasSuffix(".ts") })
        try Data(repeating: 0x47, count: 1000).write(to: local.appendingPathComponent(damaged))
        let player = try await TestMedia.offloaded { try Player(["sample-aes", "--data-dir", data]) }
        let answer = try await TestMedia.offloaded {
            try Self.fetch(String(player.url.dropLast("master.m3u8".count)) + damaged)
        }
        #expect(answer.status == 502, "\(answer.status)")
        let stopped = try await TestMedia.offloaded { player.stop() }
        #expect(stopped.stderr.contains("invalid-content: sample-aes/\(damaged)"), "\(stopped.stderr)")
    }

    @Test("SAMPLE-AES MPEG-TS segments of several hundred KB are made clear where they were read and sent with their length: ffmpeg reads the clear packets; a range is answered whole-segment (206 with the clear size); a segment damaged past its first 188 KB is refused (502) with invalid-content")
    func sampleAESLongSegments() async throws {
        let (server, origin, site, _, data) = try await Self.stage("play-sample-aes-stream")
        defer { server.stop(); origin.stop() }
        // 1280x720: segments of several hundred KB (the proxy makes one clear whole, in memory, up to 16 MB).
        let input = try await TestMedia.offloaded { try TestMedia.make("play-sample-aes-720p", seconds: 4, size: "1280x720") }
        try await TestMedia.offloaded {
            try Self.packageAndDownload(input, clear: "clear", id: "big", format: "hls-ts", scheme: "sample-aes", entry: "master.m3u8",
                                        site: site, origin: origin, server: server, data: data)
        }
        origin.stop()
        server.stop()
        let local = URL(fileURLWithPath: data).appendingPathComponent("assets/big")
        let segment = try #require(TestMedia.files(under: local).filter { $0.hasPrefix("video_0/") && $0.hasSuffix(".ts") }.sorted().first)
        let stored = try TestMedia.bytes(local.appendingPathComponent(segment))
        #expect(stored.count > 2 * 188 * 1024, "\(segment): \(stored.count) bytes")

        let player = try await TestMedia.offloaded { try Player(["big", "--data-dir", data]) }
        let base = String(player.url.dropLast("master.m3u8".count))
        try await TestMedia.offloaded { () throws -> Void in
            let expected = try TestMedia.packetHashes(site.appendingPathComponent("clear/master.m3u8").path)
            let played = try TestMedia.packetHashes(player.url)
            #expect(!expected.isEmpty && played == expected, "\(played.count) packets vs \(expected.count)")
            let whole = try Self.fetch(base + segment)
            #expect(whole.status == 200 && whole.headers["content-length"] == String(whole.body.count), "\(whole.headers)")
            let clear = try TestMedia.bytes(site.appendingPathComponent("clear").appendingPathComponent(segment))
            #expect(try TSDemuxer.demux(whole.body).map { $0.samples.map { Array($0.data) } } == TSDemuxer.demux(clear).map { $0.samples.map { Array($0.data) } })
            let ranged = try Self.fetch(base + segment, range: "bytes=188-375")
            #expect(ranged.status == 206 && ranged.headers["content-range"] == "bytes 188-375/\(whole.body.count)" && ranged.body == Array(whole.body[188...375]),
                    "\(ranged.headers)")
        }
        // Damaged past the first 188 KB: made clear whole before the answer starts, so it is refused; the event names the segment.
        var damaged = stored
        for index in stride(from: 1100 * 188, to: damaged.count, by: 188) { damaged[index] = 0 }  // no sync bytes past 206 KB
        try Data(damaged).write(to: local.appendingPathComponent(segment))
        try await TestMedia.offloaded { () throws -> Void in
            let refused = try Self.fetch(base + segment)
            #expect(refused.status == 502, "\(refused.status): \(refused.body.count) bytes")
        }
        let stopped = try await TestMedia.offloaded { player.stop() }
        #expect(stopped.stderr.contains("invalid-content: big/\(segment)"), "\(stopped.stderr)")
    }

    @Test("play --json: the first line says what the content is — protected, its scheme, its audio tracks, the license's output controls — and, refused for want of a license, the same with no URL (seed 000 §5.3.2a, §5.3.4, §5.3.5)")
    func describesTheContent() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play-json")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded {
            try Self.packageAndDownload(input, clear: "clear", id: "film", format: "cmaf", scheme: "cbcs", entry: "master.m3u8",
                                        site: site, origin: origin, server: server, data: data)
            let played = try CLIRunner.run(["play", "film", "--data-dir", data, "--json", "--exec", "true"])
            #expect(played.status == 0, "\(played.stderr)")
            let line = try #require(played.stdout.split(separator: "\n").first.map(String.init))
            let info = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            #expect((info["url"] as? String)?.hasPrefix("http://127.0.0.1:") == true && info["protected"] as? Bool == true, "\(line)")
            #expect(info["drm"] as? [String] == ["sample-aes"], "\(line)")
            let tracks = try #require(info["audioTracks"] as? [[String: Any]], "\(line)")
            #expect(tracks.count == 1 && (tracks.first?["codec"] as? String)?.hasPrefix("mp4a") == true, "\(line)")
            let controls = try #require(info["outputControls"] as? [String: Any], "\(line)")
            let rights = try #require(try JSONSerialization.jsonObject(with: Data(try CLIRunner.run(["rights", "film", "--data-dir", data, "--json"]).stdout.utf8)) as? [String: Any])
            let licensed = try #require(rights["outputControls"] as? [String: Any], "satchel rights --json prints them too: \(rights)")
            #expect(NSDictionary(dictionary: controls) == NSDictionary(dictionary: licensed) && controls["hdcp"] as? String == "none", "\(line)")
            // The app declares its output: one the license does not allow refuses the session, with the reason.
            let airPlay = try CLIRunner.run(["play", "film", "--data-dir", data, "--output", "airplay", "--exec", "true"])
            #expect(airPlay.status != 0 && airPlay.stderr.contains("output-not-allowed: the license does not allow AirPlay"), "\(airPlay.stderr)")
            #expect(try CLIRunner.run(["play", "film", "--data-dir", data, "--output", "internal", "--exec", "true"]).status == 0)

            // Another device, no license: refused, but what the content is comes first.
            let other = server.directory.appendingPathComponent("other").path
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(), "--data-dir", other]).status == 0)
            let refused = try CLIRunner.run(["play", origin.url("film/master.m3u8"), "--data-dir", other, "--license-asset", "film", "--json", "--exec", "true"])
            #expect(refused.status != 0 && refused.stderr.contains("no-rights"), "\(refused.stderr)")
            let first = try #require(refused.stdout.split(separator: "\n").first.map(String.init), "\(refused.stdout)")
            let described = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any], "\(first)")
            #expect(described["url"] is NSNull && described["protected"] as? Bool == true && described["drm"] as? [String] == ["sample-aes"], "\(first)")

            let clear = try CLIRunner.run(["play", origin.url("clear/master.m3u8"), "--data-dir", other, "--json", "--exec", "true"])
            let plain = try #require(try JSONSerialization.jsonObject(with: Data((clear.stdout.split(separator: "\n").first ?? "").utf8)) as? [String: Any], "\(clear.stdout)")
            #expect(plain["protected"] as? Bool == false && (plain["drm"] as? [String])?.isEmpty == true && plain["outputControls"] is NSNull, "\(plain)")
        }
    }

    @Test("audio tracks (seed 000 §5.3.5): --json lists each; --audio picks one by name or language as the default, every other still offered; an unknown one is refused with the list")
    func audioSelection() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play-audio")
        defer { server.stop(); origin.stop() }
        let video = try await TestMedia.offloaded { try TestMedia.make("play-audio-video", seconds: 4, audio: false) }
        let tracks = try await TestMedia.offloaded {
            try ["eng", "fra"].map { try TestMedia.make("play-audio-\($0)", seconds: 4, extra: ["-metadata:s:a:0", "language=\($0)"], video: false) }
        }
        _ = input
        let url = origin.url("dubbed/master.m3u8")
        try await TestMedia.offloaded {
            let packaged = try CLIRunner.run(["package", video.path] + tracks.map(\.path) + ["--out", site.appendingPathComponent("dubbed").path,
                                             "--format", "hls-ts", "--segment-duration", "2"])
            #expect(packaged.status == 0, "\(packaged.stderr)")
            let described = try CLIRunner.run(["play", url, "--data-dir", data, "--json", "--exec", "true"])
            let line = try #require(described.stdout.split(separator: "\n").first.map(String.init), "\(described.stderr)")
            let info = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            let listed = try #require(info["audioTracks"] as? [[String: Any]], "\(line)")
            #expect(listed.compactMap { $0["language"] as? String } == ["eng", "fra"], "\(line)")
            #expect(listed.allSatisfy { ($0["codec"] as? String)?.hasPrefix("mp4a") == true && $0["channels"] != nil }, "\(line)")

            let unknown = try CLIRunner.run(["play", url, "--data-dir", data, "--audio", "deu", "--exec", "true"])
            #expect(unknown.status != 0 && unknown.stderr.contains("no audio track named \"deu\"") && unknown.stderr.contains("fra (fra)"), "\(unknown.stderr)")
        }
        for wanted in ["fra", "FRA", "eng"] {
            let player = try await TestMedia.offloaded { try Player([url, "--data-dir", data, "--audio", wanted]) }
            let master = try await TestMedia.offloaded { try Self.fetch(player.url) }
            _ = try await TestMedia.offloaded { player.stop() }
            let media = String(decoding: master.body, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix("#EXT-X-MEDIA:") && $0.contains("TYPE=AUDIO") }
            #expect(media.count == 2, "both tracks stay offered: \(media)")
            let chosen = wanted.lowercased()
            #expect(media.filter { $0.contains("DEFAULT=YES") }.map { $0.contains("LANGUAGE=\"\(chosen)\"") } == [true], "\(wanted): \(media)")
            #expect(media.contains { $0.contains("LANGUAGE=\"\(chosen)\"") && $0.contains("AUTOSELECT=YES") })
        }
    }

    @Test("rights that expire after first use (seed 000 §5.3.2d): a 10-second playback window starts at the first protected bytes served, not when the session opens nor with 20 HEADs of a segment; it plays, then is refused")
    func playbackWindow() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play-window")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded {
            try Self.package(input, into: site.appendingPathComponent("window"), format: "cmaf", scheme: "cbcs", asset: "window", server: server,
                             offline: true, policy: ["--playback-seconds", "10"])
            try Self.download(origin.url("window/master.m3u8"), id: "window", server: server, data: data)
        }
        let player = try await TestMedia.offloaded { try Player(["window", "--data-dir", data, "--hold-off", "0.5"]) }
        try await TestMedia.offloaded {
            @Sendable func rights() throws -> [String: Any] {
                try #require(try JSONSerialization.jsonObject(with: Data(try CLIRunner.run(["rights", "window", "--data-dir", data, "--json"]).stdout.utf8)) as? [String: Any])
            }
            let master = String(decoding: try Self.fetch(player.url).body, as: UTF8.self)
            let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: player.url))).absoluteURL
            let media = String(decoding: try Self.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            let segments = media.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
            #expect(try rights()["firstUse"] == nil, "playlists are not protected bytes: no use yet")
            // HEADs (players and link checkers send them) answer as a GET would, and are no use: 20 of them start nothing.
            let segmentURL = mediaURL.deletingLastPathComponent().appendingPathComponent(segments[0]).absoluteString
            for _ in 0..<20 {
                let head = try OriginCommandTests.request(segmentURL, method: "HEAD")
                #expect(head.status == 200 && head.headers["content-type"] != nil, "\(head.status) \(head.headers)")
            }
            #expect(try rights()["firstUse"] == nil, "a HEAD starts no playback window")
            Thread.sleep(forTimeInterval: 3)  // the window must not have started at the session's opening
            let first = try Self.fetch(segmentURL)
            let started = Date()
            #expect(first.status == 200)
            let head = try OriginCommandTests.request(segmentURL, method: "HEAD")
            #expect(head.headers["content-type"] == first.headers["content-type"] && head.headers["content-length"] == first.headers["content-length"],
                    "a HEAD answers the headers a GET does: \(head.headers) \(first.headers)")
            let used = try rights()
            #expect(used["firstUse"] != nil && used["status"] as? String == "valid", "\(used)")
            Thread.sleep(forTimeInterval: 5)
            #expect(try Self.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(segments[1]).absoluteString).status == 200,
                    "8 s after opening, 5 s into the window: still plays")
            Thread.sleep(forTimeInterval: max(0, 11 - Date().timeIntervalSince(started)))
            let late = try Self.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(segments[0]).absoluteString)
            #expect(late.status != 200, "the window ended: \(late.status)")
            #expect(try rights()["status"] as? String == "expired")
        }
        _ = try await TestMedia.offloaded { player.stop() }
    }

    @Test("renewal during playback (seed 001 \"License renewal\"): a license that comes due while a session plays is renewed in the background, so playback goes on past its first 12-second rental; a renewal the server refuses (the token has expired) ends the session with the rights-expired notice")
    func renewalDuringPlayback() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play-renewal")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded {
            try Self.package(input, into: site.appendingPathComponent("renew"), format: "cmaf", scheme: "cbcs", asset: "renew", server: server,
                             offline: false, policy: ["--rental-seconds", "12", "--renewal-seconds", "4"])
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(), "--data-dir", data]).status == 0)
        }
        /// A segment URL of the session at `url`.
        @Sendable func segment(_ url: String) throws -> String {
            let master = String(decoding: try Self.fetch(url).body, as: UTF8.self)
            let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: url))).absoluteURL
            let media = String(decoding: try Self.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            let first = try #require(media.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            return mediaURL.deletingLastPathComponent().appendingPathComponent(String(first)).absoluteString
        }
        let token = try await server.token(persistent: false, asset: "renew")
        let player = try await TestMedia.offloaded { try Player([origin.url("renew/master.m3u8"), "--data-dir", data, "--token", token, "--hold-off", "0.5"]) }
        try await TestMedia.offloaded {
            let url = try segment(player.url)
            let start = Date()
            var statuses: [Int] = []
            while Date().timeIntervalSince(start) < 18 {
                statuses.append(try Self.fetch(url).status)
                Thread.sleep(forTimeInterval: 1.5)
            }
            #expect(statuses.allSatisfy { $0 == 200 }, "played 18 s on a 12 s rental: \(statuses)")
        }
        _ = try await TestMedia.offloaded { player.stop() }

        // A token that expires in 6 s: the next renewal with it is refused, and the session ends.
        let short = try await TestMedia.offloaded { () throws -> String in
            let made = try CLIRunner.run(["token", "--jwks", server.jwks.path, "--kid", "backend", "--sub", "user-42", "--asset", "renew", "--ttl", "6"])
            return made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let ending = try await TestMedia.offloaded { try Player([origin.url("renew/master.m3u8"), "--data-dir", data, "--token", short, "--hold-off", "0.5"]) }
        try await TestMedia.offloaded {
            let url = try segment(ending.url)
            let start = Date()
            var status = 200
            while status == 200, Date().timeIntervalSince(start) < 25 {
                Thread.sleep(forTimeInterval: 1)
                status = try Self.fetch(url).status
            }
            #expect(status != 200, "the session ended once its renewal was refused")
            let stopped = ending.stop()
            #expect(stopped.stderr.contains("rights-expired: renew") && stopped.stderr.contains("refused to renew the license"), "\(stopped.stderr)")
        }
    }

    @Test("online: satchel play URL --token acquires a license for the token's asset and plays CMAF cbcs straight from the origin, decrypted; the origin's error status is forwarded (server-error event), an origin that is down answers 503")
    func online() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play-online")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded {
            try Self.package(input, into: site.appendingPathComponent("clear"), format: "cmaf")
            try Self.package(input, into: site.appendingPathComponent("cdn-movie"), format: "cmaf", scheme: "cbcs", asset: "movie", server: server)
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(), "--data-dir", data]).status == 0)
        }
        let token = try await server.token(persistent: false, asset: "movie")
        let player = try await TestMedia.offloaded { try Player([origin.url("cdn-movie/master.m3u8"), "--data-dir", data, "--token", token]) }
        try await TestMedia.offloaded {
            let expected = try TestMedia.packetHashes(site.appendingPathComponent("clear/master.m3u8").path)
            let played = try TestMedia.packetHashes(player.url)
            #expect(!expected.isEmpty && played == expected, "\(played.count) packets vs \(expected.count)")
            let licenses = try CLIRunner.run(["license", "list", "--data-dir", data, "--json"])
            #expect(licenses.stdout.contains("\"movie\""), "the token's asset was licensed: \(licenses.stdout)")

            let master = String(decoding: try Self.fetch(player.url).body, as: UTF8.self)
            let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: player.url))).absoluteURL
            let media = String(decoding: try Self.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            let segments = media.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }.map(String.init)
            #expect(segments.count >= 2 && !media.contains("EXT-X-KEY"), "\(media)")
            origin.inject(.status(500), on: "/" + (segments.last ?? ""), times: 1)
            let failed = try Self.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(segments.last ?? "").absoluteString)
            #expect(failed.status == 500, "the origin's status reaches the player: \(failed.status)")
            origin.stop()
            let down = try Self.fetch(mediaURL.deletingLastPathComponent().appendingPathComponent(segments[0]).absoluteString)
            #expect(down.status == 503, "\(down.status)")
        }
        let stopped = try await TestMedia.offloaded { player.stop() }
        // The asset is the token's claim (the URL's folder, cdn-movie, names no license); a token for every asset
        // ("*") needs --license-asset. Both sessions run on the license acquired above.
        let origin2 = try await TestOrigin.start(root: site)
        defer { origin2.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            let url = origin2.url("cdn-movie/master.m3u8")
            let named = try CLIRunner.run(["play", url, "--data-dir", data, "--token", try server.token(), "--license-asset", "movie", "--exec", "curl -sf {url}"])
            #expect(named.status == 0 && named.stderr.contains("opened: movie"), "\(named.stderr)")
            let unnamed = try CLIRunner.run(["play", url, "--data-dir", data, "--exec", "true"])
            #expect(unnamed.status != 0 && unnamed.stderr.contains("no-rights"), "the URL's folder names no license: \(unnamed.stderr)")
        }
        #expect(stopped.stderr.contains("opened: movie") && stopped.stderr.contains("(answered 500)")
                && stopped.stderr.contains("(answered 503)"), "\(stopped.stderr)")
        // A server-error notice names the file's address on the origin (issue 51 §3), never its query, and never the token.
        let addresses = stopped.stderr.split(separator: "\n").filter { $0.contains(origin.baseURL) }
        #expect(!stopped.stderr.contains(token) && addresses.allSatisfy { $0.contains("server-error:") && !$0.contains("?") },
                "no token, no query, an origin address only in a server-error notice: \(addresses)")
    }

    @Test("download and play: an asset just added plays at once, every file fetched from the origin while ffmpeg reads and kept in the store; opened reports the cache; offline, the cached part plays and a file not cached answers 503 with an event; outside its availability window an asset does not open")
    func partialFill() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play-fill")
        defer { server.stop(); origin.stop() }
        server.stop()  // clear content: no license server needed
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("show").path, "--format", "hls-ts",
                                       "--segment-duration", "1"]).status == 0)
            #expect(try CLIRunner.run(["download", "add", origin.url("show/master.m3u8"), "--data-dir", data, "--id", "show"]).status == 0)
        }
        // Outside its availability window an asset does not open: not yet published, or past its expiry.
        try await TestMedia.offloaded { () throws -> Void in
            let format = ISO8601DateFormatter()
            for (id, window, status) in [("later", ["--publish", format.string(from: Date().addingTimeInterval(86_400))], "in-future"),
                                         ("gone", ["--expiry", format.string(from: Date().addingTimeInterval(-60))], "expired")] {
                #expect(try CLIRunner.run(["download", "add", origin.url("show/master.m3u8"), "--data-dir", data, "--id", id] + window).status == 0)
                let refused = try CLIRunner.run(["play", id, "--data-dir", data])
                #expect(refused.status != 0 && refused.stdout.isEmpty && refused.stderr.contains(status), "\(id): \(refused.stderr)")
            }
        }
        let local = URL(fileURLWithPath: data).appendingPathComponent("assets/show")
        let segmentsOnDisk = { TestMedia.files(under: local).filter { $0.hasSuffix(".ts") } }
        #expect(segmentsOnDisk().isEmpty, "nothing downloaded yet")
        let player = try await TestMedia.offloaded { try Player(["show", "--data-dir", data]) }
        try await TestMedia.offloaded {
            let expected = try TestMedia.packetHashes(site.appendingPathComponent("show/master.m3u8").path)
            let played = try TestMedia.packetHashes(player.url)
            #expect(!expected.isEmpty && played == expected, "\(played.count) packets vs \(expected.count)")
        }
        let first = try await TestMedia.offloaded { player.stop() }
        #expect(first.stderr.contains("opened: show (cached 0.0 s of") && first.stderr.contains("not ready to play offline"), "\(first.stderr)")
        let filled = segmentsOnDisk()
        #expect(filled.count >= 4, "the segments the player read were kept: \(filled)")
        for name in filled {
            #expect(try Data(contentsOf: local.appendingPathComponent(name)) == Data(contentsOf: site.appendingPathComponent("show/\(name)")))  // blocking-ok: segments of a few KB, compared in a test
        }
        let progress = try await TestMedia.offloaded { try CLIRunner.run(["download", "list", "--data-dir", data]) }
        #expect(progress.status == 0, "\(progress.stderr)")

        // Offline: every segment but the last is cached; the last answers 503 with an event, the others play.
        origin.stop()
        let last = try #require(filled.sorted { $0.count == $1.count ? $0 < $1 : $0.count < $1.count }.last)
        try FileManager.default.removeItem(at: local.appendingPathComponent(last))
        let logFile = URL(fileURLWithPath: data).appendingPathComponent("play.log").path
        let offline = try await TestMedia.offloaded { try Player(["show", "--data-dir", data, "--log-level", "debug", "--log-file", logFile]) }
        try await TestMedia.offloaded { () throws -> Void in
            // A session path is the file's path in the asset's folder.
            let base = String(offline.url.dropLast("master.m3u8".count))
            func url(_ name: String) -> String { base + name }
            #expect(try Self.fetch(url(filled.first { $0 != last } ?? "")).status == 200)
            #expect(try Self.fetch(url(last)).status == 503)
            #expect(try Self.fetch(url(".satchel/plan.json")).status == 404, "the engine's plan (origin URLs, headers) is not served")
        }
        let second = try await TestMedia.offloaded { offline.stop() }
        #expect(second.stderr.contains("opened: show (cached ") && second.stderr.contains("server-error: show/"), "\(second.stderr)")
        // The failed request is logged as an error, with the session token redacted like every request line.
        let log = (try? String(contentsOfFile: logFile, encoding: .utf8)) ?? ""
        #expect(log.contains("request failed") && !log.contains(offline.url.split(separator: "/")[2]), "\(log.suffix(800))")
    }

    @Test("--passthrough forwards the player's key requests through the proxy: the key URI points at the session, the request reaches the key server with the token, the custom headers and the custom data (in a JSON body's customData, else its header); ffmpeg plays the protected stream with the keys it gets; no rights, no forwarding")
    func passthroughForwarding() async throws {
        let (server, origin, site, input, data) = try await Self.stage("play-forward")
        defer { server.stop(); origin.stop() }
        let keys = try await RecordingProxy.start(upstream: server.url)
        defer { keys.stop() }
        let token = try await server.token()
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
            let packaged = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("fwd").path, "--format", "hls-ts",
                                              "--segment-duration", "2", "--scheme", "aes-128", "--key-uri", keys.baseURL + "/keys/{kid}",
                                              "--register", "--asset-id", "fwd", "--data-dir", server.data, "--offline"])
            #expect(packaged.status == 0, "\(packaged.stderr)")
            try Self.download(origin.url("fwd/master.m3u8"), id: "fwd", server: server, data: data)
        }
        // The key server is not the license server: without --license-host its key URI is left alone, and it never
        // sees the token (a host the content chose gets no credentials).
        let keyHost = try #require(PlaybackHostName.of(keys.baseURL))
        let unlisted = try await TestMedia.offloaded {
            try Player(["fwd", "--data-dir", data, "--passthrough", "--token", token, "--license-header", "X-Satchel-Test: yes"])
        }
        try await TestMedia.offloaded { () throws -> Void in
            let master = String(decoding: try Self.fetch(unlisted.url).body, as: UTF8.self)
            let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: unlisted.url))).absoluteURL
            let media = String(decoding: try Self.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            #expect(media.contains("URI=\"\(keys.baseURL)/keys/") && !media.contains(".satchel/keys/"), "\(media)")
            _ = try? TestMedia.packetHashes(unlisted.url)  // the player fetches the key itself, without the token
            #expect(!keys.requests.contains { $0.header("Authorization") != nil || $0.header("X-Satchel-Test") != nil })
            _ = unlisted.stop()
        }
        let player = try await TestMedia.offloaded {
            try Player(["fwd", "--data-dir", data, "--passthrough", "--token", token, "--license-header", "X-Satchel-Test: yes",
                        "--custom-data", "<data>account-7</data>", "--license-host", keyHost])
        }
        try await TestMedia.offloaded { () throws -> Void in
            let expected = try TestMedia.packetHashes(site.appendingPathComponent("clear/master.m3u8").path)
            let played = try TestMedia.packetHashes(player.url)
            #expect(!expected.isEmpty && played == expected, "\(played.count) packets vs \(expected.count)")
            let fetched = try #require(keys.requests.last { $0.method == "GET" && $0.path.hasPrefix("/keys/") })
            #expect(fetched.header("Authorization") == "Bearer \(token)" && fetched.header("X-Satchel-Test") == "yes")
            #expect(fetched.header(LicenseRequestExtras.customDataHeader) == Data("<data>account-7</data>".utf8).base64EncodedString())

            let master = String(decoding: try Self.fetch(player.url).body, as: UTF8.self)
            let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: player.url))).absoluteURL
            let media = String(decoding: try Self.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            let token = String(player.url.split(separator: "/")[2])
            #expect(media.contains("#EXT-X-KEY:METHOD=AES-128,URI=\"/\(token)/.satchel/keys/0\"") && !media.contains(keys.baseURL), "\(media)")
            let keyURL = try #require(URL(string: "/\(token)/.satchel/keys/0", relativeTo: URL(string: player.url))).absoluteString

            // A JSON challenge takes the custom data as its customData member (the key server refuses the POST: 405).
            _ = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-o", "/dev/null", "-X", "POST", "-H", "Content-Type: application/json",
                                                                              "--data", #"{"kids":["AAAAAAAAAAAAAAAAAAAAAA"]}"#, keyURL])
            let posted = try #require(keys.requests.first { $0.method == "POST" })
            #expect(posted.json?["customData"] as? String == "<data>account-7</data>" && posted.json?["kids"] != nil)
            #expect(posted.header(LicenseRequestExtras.customDataHeader) == nil && posted.header("X-Satchel-Test") == "yes")

            // No rights, no keys: the license is released, the forwarded key URI answers 403.
            #expect(try CLIRunner.run(["license", "release", "fwd", "--data-dir", data]).status == 0)
            let refused = try Self.fetch(keyURL)
            #expect(refused.status == 403 && String(decoding: refused.body, as: UTF8.self).contains("no-rights"), "\(refused.status)")
        }
        _ = try await TestMedia.offloaded { player.stop() }
    }

    /// True when `bytes` hold the four characters `type` (a box type) anywhere.
    static func contains(_ bytes: [UInt8], _ type: String) -> Bool {
        String(decoding: bytes, as: UTF8.self).contains(type)
    }
}

/// `host:port` of a loopback URL, as `--license-host` takes it.
enum PlaybackHostName {
    static func of(_ url: String) -> String? {
        guard let parsed = URL(string: url), let host = parsed.host, let port = parsed.port else { return nil }
        return "\(host):\(port)"
    }
}
