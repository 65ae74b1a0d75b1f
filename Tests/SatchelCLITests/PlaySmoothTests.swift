import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection
import SatchelTestSupport
import Testing

/// `satchel play` on Smooth Streaming sources (ffmpeg's `smoothstreaming` output): the proxy transcribes them to
/// HLS with clear MPEG-2 TS segments, and ffmpeg reads from the session every packet of the source.
@Suite(.serialized) struct PlaySmoothTests {
    typealias Player = PlayCommandTests.Player

    /// The (size, md5) of every packet ffmpeg reads from `input`, sorted: the content, whatever the container.
    static func contents(_ input: String) throws -> [String] {
        try TestMedia.packetHashes(input).map { $0.split(separator: ",").suffix(2).joined(separator: ",") }.sorted()
    }

    /// ffmpeg's Smooth output of `input` in `folder`, 2 s fragments. ffmpeg names the fragments by their times but
    /// starts its manifest's timeline at 0 (no `t` on the first `c`): the first `c` of each stream gets its time.
    static func smooth(_ input: URL, into folder: URL) throws {
        _ = try TestMedia.run("ffmpeg", ["-v", "error", "-i", input.path, "-c", "copy", "-f", "smoothstreaming", "-min_frag_duration", "2000000",
                                         folder.path])
        var manifest = try String(contentsOf: folder.appendingPathComponent("Manifest"), encoding: .utf8)
        for level in try FileManager.default.contentsOfDirectory(atPath: folder.path) where level.hasPrefix("QualityLevels(") {
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent(level).path).filter { $0.hasPrefix("Fragments(") }
            let named = files.compactMap { name -> (String, UInt64)? in
                let inside = name.dropFirst("Fragments(".count).dropLast()
                guard let equals = inside.firstIndex(of: "="), let time = UInt64(inside[inside.index(after: equals)...]) else { return nil }
                return (String(inside[..<equals]), time)
            }
            guard let stream = named.first?.0, let first = named.map(\.1).min() else { continue }
            let marker = "Fragments(\(stream)={start time})\">"
            guard let at = manifest.range(of: marker), let c = manifest.range(of: "<c n=\"0\"", range: at.upperBound..<manifest.endIndex) else { continue }
            manifest.replaceSubrange(c, with: "<c n=\"0\" t=\"\(first)\"")
        }
        try manifest.write(to: folder.appendingPathComponent("Manifest"), atomically: true, encoding: .utf8)
    }

    /// The Smooth presentation in `folder` protected as a PlayReady origin would: every fragment encrypted with
    /// `key` as `cenc` (8-byte IVs; video in subsamples that leave NAL and slice headers clear), its sample
    /// encryption in PIFF's `uuid` box, and the manifest's `Protection` naming the key ID in a PlayReady header.
    static func protect(_ folder: URL, with key: ContentKey) throws {
        let manifestURL = folder.appendingPathComponent("Manifest")
        var manifest = try SmoothManifest(parsing: String(contentsOf: manifestURL, encoding: .utf8))
        let cipher = try CommonEncryption(scheme: .cenc, key: key.key, iv: key.iv)
        var counter: UInt64 = 0
        var changed = 0
        for stream in manifest.streams {
            for level in stream.qualityLevels {
                let track = try level.track(kind: stream.type, timescale: stream.timescale ?? manifest.timescale)
                let isVideo = track.kind == .video
                for time in stream.fragmentTimes {
                    let file = folder.appendingPathComponent(stream.fragmentURL(bitrate: level.bitrate, startTime: time))
                    let clear = try MP4Demuxer.demuxFragment(Array(try Data(contentsOf: file)), track: track, startDTS: Int64(time))
                    var samples: [FragmentSample] = []
                    for sample in clear.samples {
                        counter += 1
                        let iv = (0..<8).map { UInt8(truncatingIfNeeded: counter >> (56 - 8 * $0)) }
                        let subsamples = isVideo ? try CommonEncryption.videoSubsamples(sample.data, codec: track.codec) : []
                        var data = Array(sample.data)
                        try cipher.encrypt(&data, subsamples: subsamples, iv: iv, isVideo: isVideo)
                        if data[...] != sample.data { changed += 1 }
                        samples.append(FragmentSample(duration: sample.duration, ctsOffset: sample.ctsOffset, isSync: sample.isSync, data: data[...],
                                                      iv: iv, subsamples: subsamples))
                    }
                    let protection = cipher.protection(keyID: key.keyID, kind: track.kind, psshBoxes: [])
                    let encrypted = FMP4Writer.mediaSegment(sequenceNumber: 1, baseDecodeTime: time, samples: samples, protection: protection)
                    try Data(try PIFFFixtures.piff(encrypted)).write(to: file)
                }
            }
        }
        #expect(changed == Int(counter), "every sample carries encrypted bytes")
        manifest.protectionHeader = PIFFFixtures.playReadyHeader(key.keyID.bytes, version: "4.0.0.0")
        try manifest.text.write(to: manifestURL, atomically: true, encoding: .utf8)
    }

    @Test("Smooth Streaming, online and downloaded: a PROGRAM-ID=1 variant per quality level, one TS segment per video fragment, every packet of the source; --passthrough serves the manifest as it is")
    func onlineAndDownloaded() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("play-smooth")
        defer { server.stop(); origin.stop() }
        server.stop()
        let folder = site.appendingPathComponent("show.ism")
        try await TestMedia.offloaded { () throws -> Void in
            try Self.smooth(input, into: folder)
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear-ts").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
        }
        // The TS package's packets (TS carries H.264 with access unit delimiters and AAC with ADTS headers).
        let expected = try await TestMedia.offloaded { try Self.contents(site.appendingPathComponent("clear-ts/master.m3u8").path) }
        #expect(!expected.isEmpty)

        let online = try await TestMedia.offloaded { try Player([origin.url("show.ism/Manifest"), "--data-dir", data]) }
        try await TestMedia.offloaded { () throws -> Void in
            #expect(online.url.hasSuffix("/.hls/master.m3u8"), "\(online.url)")
            let master = String(decoding: try PlayCommandTests.fetch(online.url).body, as: UTF8.self)
            #expect(master.contains("#EXT-X-STREAM-INF:PROGRAM-ID=1,BANDWIDTH=") && master.contains("RESOLUTION=320x240")
                    && master.contains("CODECS=\"avc1.") && master.hasSuffix("#EXT-X-ENDLIST\n"), "\(master)")
            let mediaName = try #require(PlayDASHTests.uris(master).first)
            let mediaURL = try #require(URL(string: mediaName, relativeTo: URL(string: online.url))).absoluteURL
            let media = String(decoding: try PlayCommandTests.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            #expect(PlayDASHTests.uris(media).count == 2 && media.contains("#EXTINF:2,") && media.hasSuffix("#EXT-X-ENDLIST\n"), "\(media)")
            let played = try Self.contents(online.url)
            #expect(played == expected, "online: \(played.count) packets vs \(expected.count)")
            // Timestamps are the manifest's times: ffmpeg's first video fragment starts at 0.08 s, its audio at 0.0587 s.
            // ffmpeg starts its reading at the audio (0.0587 s): the first video packet is the difference later.
            let manifest = try String(contentsOf: folder.appendingPathComponent("Manifest"), encoding: .utf8)
            let starts = manifest.components(separatedBy: "<c n=\"0\" t=\"").dropFirst().compactMap { Int64($0.prefix { $0 != "\"" }) }
            #expect(starts.count == 2, "\(manifest)")
            let later = (starts.first ?? 0) * 9 / 1000 - (starts.last ?? 0) * 9 / 1000  // video minus audio, 90 kHz
            let timestamps = try TestMedia.packetHashes(online.url)
            #expect(later > 0 && timestamps.contains { $0.hasPrefix("\(later),\(later),") }, "\(later)")
        }
        _ = try await TestMedia.offloaded { online.stop() }

        try await TestMedia.offloaded { () throws -> Void in
            let added = try CLIRunner.run(["download", "add", origin.url("show.ism/Manifest"), "--data-dir", data, "--id", "show"])
            #expect(added.status == 0, "\(added.stderr)")
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stderr)")
        }
        origin.stop()  // offline from here on
        let offline = try await TestMedia.offloaded { try Player(["show", "--data-dir", data]) }
        try await TestMedia.offloaded { () throws -> Void in
            let played = try Self.contents(offline.url)
            #expect(played == expected, "downloaded: \(played.count) packets vs \(expected.count)")
        }
        _ = try await TestMedia.offloaded { offline.stop() }

        let passing = try await TestMedia.offloaded { try Player(["show", "--data-dir", data, "--passthrough"]) }
        try await TestMedia.offloaded { () throws -> Void in
            let manifest = try PlayCommandTests.fetch(passing.url)
            #expect(manifest.status == 200 && manifest.headers["content-type"] == "application/vnd.ms-sstr+xml", "\(manifest.headers)")
            #expect(String(decoding: manifest.body, as: UTF8.self).contains("<SmoothStreamingMedia"))
        }
        _ = try await TestMedia.offloaded { passing.stop() }
    }

    @Test("protected Smooth Streaming (PIFF sample encryption, a PlayReady header naming the key): played online with --token (also when the header names no key ID: the license's only key) and after a download with a license, decrypted, every packet of the source; without a license the session does not open")
    func protected() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("play-smooth-protected")
        defer { server.stop(); origin.stop() }
        let folder = site.appendingPathComponent("protected.ism")
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear-ts").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
            // The single key the license server holds for asset "clip"; the Smooth fragments are encrypted here with it.
            let key = try ContentKey(keyID: KeyID(hex: "10112233445566778899aabbccddeeff"),
                                     key: SecretBytes(hex: "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf", count: 16), iv: [UInt8](repeating: 7, count: 16))
            try Self.smooth(input, into: folder)
            try Self.protect(folder, with: key)
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(), "--data-dir", data]).status == 0)
        }
        let expected = try await TestMedia.offloaded { try Self.contents(site.appendingPathComponent("clear-ts/master.m3u8").path) }
        #expect(!expected.isEmpty)

        try await TestMedia.offloaded { () throws -> Void in
            // The fragments really are protected: without a license there are no keys and no session.
            let refused = try CLIRunner.run(["play", origin.url("protected.ism/Manifest"), "--data-dir", data, "--exec", "true"])
            #expect(refused.status != 0 && refused.stderr.contains("no-rights"), "\(refused.stderr)")
        }
        let token = try await server.token(persistent: false, asset: "clip")
        let online = try await PlayCommandTests.plays([origin.url("protected.ism/Manifest"), "--data-dir", data, "--token", token], token: token,
                                                      expected: expected, label: "online", read: Self.contents)
        #expect(online.contains("opened: clip"), "\(online)")

        // A PlayReady header that names no key ID this proxy reads: the license's only key decrypts.
        var unnamed = try SmoothManifest(parsing: String(contentsOf: folder.appendingPathComponent("Manifest"), encoding: .utf8))
        unnamed.protectionHeader = "AAAA"
        try unnamed.text.write(to: folder.appendingPathComponent("Unnamed"), atomically: true, encoding: .utf8)
        try await PlayCommandTests.plays([origin.url("protected.ism/Unnamed"), "--data-dir", data, "--token", token], token: token,
                                         expected: expected, label: "the only key", read: Self.contents)

        try await TestMedia.offloaded { () throws -> Void in
            let added = try CLIRunner.run(["download", "add", origin.url("protected.ism/Manifest"), "--data-dir", data, "--id", "clip",
                                           "--license", "--token", try server.token()])
            #expect(added.status == 0, "\(added.stderr)")
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stderr)")
        }
        origin.stop()
        server.stop()  // offline: the downloaded license alone
        try await PlayCommandTests.plays(["clip", "--data-dir", data], expected: expected, label: "downloaded", read: Self.contents)
    }

    @Test("Satchel's own Smooth output (--format smooth): a client manifest with a quality level per rendition on one timeline, PIFF fragments at QualityLevels(bitrate)/Fragments(kind=time), the SMIL server manifest; clear, and cenc with the PlayReady header of its key (PIFF sample encryption boxes): downloaded with a license and played, every packet of the source; refused for other schemes and DRM systems")
    func satchelSmoothOutput() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("smooth-output")
        defer { server.stop(); origin.stop() }
        let small = try await TestMedia.offloaded { try TestMedia.make("smooth-output-small", seconds: 4, size: "160x120") }
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear-ts").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
            try PlayCommandTests.package(input, small, into: site.appendingPathComponent("plain"), format: "smooth")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("locked"), format: "smooth", scheme: "cenc", asset: "locked",
                                         server: server, offline: true)
            let manifest = try SmoothManifest(parsing: String(contentsOf: site.appendingPathComponent("plain/Manifest"), encoding: .utf8))
            let video = try #require(manifest.streams.first { $0.type == "video" })
            #expect(video.qualityLevels.count == 2 && video.fragmentTimes.count == 2 && manifest.protectionHeader == nil, "\(manifest)")
            let audio = try #require(manifest.streams.first { $0.type == "audio" }?.qualityLevels.first)
            #expect(audio.bitsPerSample == 16 && audio.packetSize == 4 && audio.audioTag == 255 && audio.samplingRate != nil && audio.channels != nil,
                    "the client manifest's audio attributes, as ffmpeg writes them: \(audio)")
            for level in video.qualityLevels {
                for time in video.fragmentTimes {
                    #expect(FileManager.default.fileExists(atPath: site.appendingPathComponent("plain/" + video.fragmentURL(bitrate: level.bitrate, startTime: time)).path))
                }
            }
            let ism = try String(contentsOf: site.appendingPathComponent("plain/manifest.ism"), encoding: .utf8)
            #expect(ism.contains(#"<meta name="clientManifestRelativePath" content="Manifest"/>"#) && ism.contains("<video src=\"QualityLevels("))
            let locked = try SmoothManifest(parsing: String(contentsOf: site.appendingPathComponent("locked/Manifest"), encoding: .utf8))
            let header = try #require(locked.protectionHeader)
            let stored = try CLIRunner.run(["keys", "list", "--data-dir", server.data]).stdout
            let named = PlayReadyHeader.keyIDs(base64: header).map(\.hex)
            #expect(named.count == 1 && named.allSatisfy { stored.contains("locked\t\($0)") }, "the header names the registered key: \(named) \(stored)")
            let lockedVideo = try #require(locked.streams.first { $0.type == "video" })
            let fragment = [UInt8](try Data(contentsOf: site.appendingPathComponent("locked/" + lockedVideo.fragmentURL(bitrate: lockedVideo.qualityLevels[0].bitrate,
                                                                                                                      startTime: lockedVideo.fragmentTimes[0]))))
            #expect(PlayCommandTests.contains(fragment, "uuid") && !PlayCommandTests.contains(fragment, "senc"), "PIFF's sample encryption box")
            for (arguments, words) in [(["--scheme", "cbcs"], "--format smooth takes --scheme clear or cenc"),
                                       (["--scheme", "cenc", "--drm", "widevine"], "signals PlayReady alone")] {
                let refused = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("refused").path, "--format", "smooth"] + arguments)
                #expect(refused.status != 0 && refused.stderr.contains(words), "\(arguments): \(refused.stderr)")
            }
            // Renditions cut at different times (key frames every second, every two) cannot share one Smooth timeline.
            let everySecond = try TestMedia.make("smooth-output-gop25", seconds: 4, size: "160x120", extra: ["-g", "25"])
            let unaligned = try CLIRunner.run(["package", input.path, everySecond.path, "--out", site.appendingPathComponent("refused").path,
                                               "--format", "smooth", "--segment-duration", "1"])
            #expect(unaligned.status != 0 && unaligned.stderr.contains("renditions cut at the same times"), "\(unaligned.stderr)")
            let token = try server.token()
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            for (id, path, license) in [("plain", "plain/Manifest", false), ("locked", "locked/Manifest", true)] {
                let added = try CLIRunner.run(["download", "add", origin.url(path), "--data-dir", data, "--id", id] + (license ? ["--license", "--token", token] : []))
                #expect(added.status == 0, "\(added.stderr)")
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stderr)")
        }
        origin.stop()  // from the device's store from here on
        let expected = try await TestMedia.offloaded { try Self.contents(site.appendingPathComponent("clear-ts/master.m3u8").path) }
        for id in ["plain", "locked"] {
            // The clear one takes a stream slot from the backplane; the licensed one plays offline, as its license allows.
            if id == "locked" { server.stop() }
            let player = try await TestMedia.offloaded { try Player([id, "--data-dir", data]) }
            try await TestMedia.offloaded { () throws -> Void in
                // The highest quality level plays first: the source's own packets.
                let played = try Self.contents(player.url)
                #expect(!expected.isEmpty && played == expected, "\(id): \(played.count) packets vs \(expected.count)")
            }
            let stopped = try await TestMedia.offloaded { player.stop() }
            #expect(stopped.status == 0, "\(id): \(stopped.stderr)")
        }
    }
}
