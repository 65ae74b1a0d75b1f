import Foundation
import SatchelDownloads
import SatchelMedia
import SatchelPackager
import SatchelTestSupport
import Testing

@Suite("Download engine: formats")
struct DownloadFormatTests {
    @Test("HLS (clear and AES-128 with keys): the local copy plays with the origin's packets; progress and events report it",
          arguments: [PackageScheme.clear, .aes128])
    func hls(scheme: PackageScheme) async throws {
        let world = try await DownloadWorld.make("hls-\(scheme.rawValue)", scheme: scheme)
        defer { world.origin.stop() }
        let manager = try await world.manager()
        let log = await EventLog(manager)
        let asset = try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "movie", options: .init(includeEncryptionKeys: true))
        #expect(asset.plan.format == .hls && asset.state == .queued)
        let summary = await manager.run()
        #expect(summary.allComplete)
        let local = try await manager.localPath("movie")
        #expect(local == world.assetDirectory("movie").appendingPathComponent("master.m3u8").path)
        let originURL = world.origin.url("asset/master.m3u8")
        let originHashes = try await TestMedia.offloaded { try TestMedia.packetHashes(originURL) }
        #expect(!originHashes.isEmpty)
        #expect(try await TestMedia.offloaded { try TestMedia.packetHashes(local) } == originHashes)
        try world.expectMediaMatchesOrigin("movie")
        if scheme == .aes128 {
            let playlist = try String(contentsOfFile: world.assetDirectory("movie").appendingPathComponent("video_0/index.m3u8").path, encoding: .utf8)
            #expect(playlist.contains("METHOD=AES-128") && !playlist.contains("http://"), "keys point at the local copies")
            let keys = DownloadWorld.files(under: world.assetDirectory("movie")).filter { $0.hasSuffix(".key") }
            #expect(!keys.isEmpty)
            for key in keys {
                let attributes = try FileManager.default.attributesOfItem(atPath: world.assetDirectory("movie").appendingPathComponent(key).path)
                #expect((attributes[.posixPermissions] as? Int) == 0o600, "content keys are readable by their owner only")
            }
        }
        // Progress: exact, on disk, contiguous from the start, ready to play.
        let progress = try await manager.progress("movie")
        #expect(progress.fraction == 1 && progress.completedFiles == progress.totalFiles && progress.isReadyToPlay)
        #expect(progress.bytes == world.mediaBytes("movie"))
        #expect(abs(progress.cachedDuration - progress.totalDuration) < 0.01 && progress.totalDuration > 5)
        let cached = await log.progress.map(\.cachedDuration)
        #expect(cached == cached.sorted(), "cached duration only grows")
        let events = await log.events
        #expect(events.contains(.started(assetID: "movie")) && events.contains(.finished(assetID: "movie")))
        #expect(events.contains(.stateChanged(assetID: "movie", state: .complete)) && events.contains(.queueChanged))
        #expect(events.contains(.engineStatusChanged(.downloading("movie"))))
        // Complete files are never fetched again.
        let requests = world.origin.log.count
        #expect(await manager.run().allComplete)
        #expect(world.origin.log.count == requests)
        await manager.close()
    }

    @Test("HLS with EXT-X-MAP (CMAF), EXT-X-BYTERANGE and a WebVTT subtitle rendition: the local copy plays like the origin")
    func hlsMapsRangesAndSubtitles() async throws {
        let world = try await DownloadWorld.make("hls-ranges", format: .cmaf)
        defer { world.origin.stop() }
        let package = world.site.appendingPathComponent("asset")
        // The audio rendition as one file with byte ranges; a subtitle rendition in English.
        let audio = try HLSMediaPlaylist(parsing: String(contentsOf: package.appendingPathComponent("audio_0/index.m3u8"), encoding: .utf8))
        var whole = Data(), ranged = audio
        for index in audio.segments.indices {
            let piece = try await TestMedia.contents(of: package.appendingPathComponent("audio_0").appendingPathComponent(audio.segments[index].uri))
            ranged.segments[index].uri = "all.m4s"
            ranged.segments[index].byteRange = HLSByteRange(length: piece.count, offset: whole.count)
            whole.append(piece)
        }
        try whole.write(to: package.appendingPathComponent("audio_0/all.m4s"))
        try ranged.text.write(to: package.appendingPathComponent("audio_0/ranged.m3u8"), atomically: true, encoding: .utf8)
        let subtitles = package.appendingPathComponent("subs")
        try FileManager.default.createDirectory(at: subtitles, withIntermediateDirectories: true)
        for number in 0..<3 {
            try "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n00:00:0\(number * 2).000 --> 00:00:0\(number * 2 + 1).000\nline \(number)\n"
                .write(to: subtitles.appendingPathComponent("en_\(number).vtt"), atomically: true, encoding: .utf8)
        }
        try "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:2,\nen_0.vtt\n#EXTINF:2,\nen_1.vtt\n#EXTINF:2,\nen_2.vtt\n#EXT-X-ENDLIST\n"
            .write(to: subtitles.appendingPathComponent("en.m3u8"), atomically: true, encoding: .utf8)
        var master = try String(contentsOf: package.appendingPathComponent("master.m3u8"), encoding: .utf8)
        master = master.replacingOccurrences(of: "audio_0/index.m3u8", with: "audio_0/ranged.m3u8")
            .replacingOccurrences(of: "#EXT-X-STREAM-INF:", with: "#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID=\"subs\",NAME=\"English\",LANGUAGE=\"en\",DEFAULT=NO,URI=\"subs/en.m3u8\"\n#EXT-X-STREAM-INF:SUBTITLES=\"subs\",")
        try master.write(to: package.appendingPathComponent("ranged.m3u8"), atomically: true, encoding: .utf8)

        let manager = try await world.manager()
        let asset = try await manager.add(url: world.origin.url("asset/ranged.m3u8"), id: "r", options: .init(languages: ["en"]))
        #expect(asset.plan.resources.contains { $0.kind == .initialization } && asset.plan.resources.contains { $0.range != nil })
        #expect(asset.plan.resources.filter { $0.localPath.hasSuffix(".vtt") }.count == 3)
        #expect(await manager.run().allComplete)
        let local = try await manager.localPath("r")
        let localMaster = try HLSMasterPlaylist(parsing: String(contentsOfFile: local, encoding: .utf8))
        #expect(localMaster.renditions.contains { $0.type == "SUBTITLES" && $0.uri == "subs/en.m3u8" })
        let localAudio = try String(contentsOfFile: world.assetDirectory("r").appendingPathComponent("audio_0/ranged.m3u8").path, encoding: .utf8)
        #expect(!localAudio.contains("BYTERANGE") && localAudio.contains("EXT-X-MAP"))
        #expect(try String(contentsOfFile: world.assetDirectory("r").appendingPathComponent("subs/en_1.vtt").path, encoding: .utf8).contains("line 1"))
        for name in ["video_0/index.m3u8", "audio_0/ranged.m3u8"] {
            let originURL = world.origin.url("asset/\(name)"), localPath = world.assetDirectory("r").appendingPathComponent(name).path
            let originHashes = try await TestMedia.offloaded { try TestMedia.packetHashes(originURL) }
            #expect(!originHashes.isEmpty)
            #expect(try await TestMedia.offloaded { try TestMedia.packetHashes(localPath) } == originHashes, "\(name)")
        }
        await manager.close()
    }

    @Test("DASH SegmentTemplate with a timeline: the lowest video by maxVideoBitrate, audio; the local MPD plays like the origin")
    func dashTemplate() async throws {
        let world = try await DownloadWorld.make("dash", format: .cmaf)
        defer { world.origin.stop() }
        let manager = try await world.manager()
        let asset = try await manager.add(url: world.origin.url("asset/manifest.mpd"), id: "dash", options: .init(maxVideoBitrate: 0, maxAudioBitrate: 0))
        #expect(asset.plan.format == .dash)
        #expect(asset.plan.resources.contains { $0.kind == .initialization } && asset.plan.resources.filter { $0.kind == .segment }.count >= 4)
        #expect(await manager.run().allComplete)
        try world.expectMediaMatchesOrigin("dash")
        let local = try await manager.localPath("dash")
        let originURL = world.origin.url("asset/manifest.mpd")
        let originHashes = try await TestMedia.offloaded { try TestMedia.packetHashes(originURL) }
        #expect(!originHashes.isEmpty)
        #expect(try await TestMedia.offloaded { try TestMedia.packetHashes(local) } == originHashes)
        await manager.close()
    }

    @Test("DASH SegmentList with byte ranges and SegmentBase: pieces become files, the rendition over the limit is skipped")
    func dashListAndBase() async throws {
        let world = try await DownloadWorld.make("dash-list", format: .cmaf)
        defer { world.origin.stop() }
        let package = world.site.appendingPathComponent("asset")
        // One file per rendition (init + every segment), as a SegmentBase/SegmentList origin would have.
        var ranges: [String] = [], videoWhole = Data()
        let videoInit = try await TestMedia.contents(of: package.appendingPathComponent("video_0/init.mp4"))
        videoWhole.append(videoInit)
        var number = 1
        while let segment = try? await TestMedia.contents(of: package.appendingPathComponent("video_0/segment_\(number).m4s")) {
            ranges.append("\(videoWhole.count)-\(videoWhole.count + segment.count - 1)")
            videoWhole.append(segment)
            number += 1
        }
        var audioWhole = try await TestMedia.contents(of: package.appendingPathComponent("audio_0/init.mp4"))
        number = 1
        while let segment = try? await TestMedia.contents(of: package.appendingPathComponent("audio_0/segment_\(number).m4s")) {
            audioWhole.append(segment)
            number += 1
        }
        try videoWhole.write(to: package.appendingPathComponent("video.mp4"))
        try audioWhole.write(to: package.appendingPathComponent("audio.mp4"))
        let original = try DASHManifest(parsing: String(contentsOf: package.appendingPathComponent("manifest.mpd"), encoding: .utf8))
        let mpd = """
        <?xml version="1.0"?>
        <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT\(original.duration ?? 6)S" profiles="urn:mpeg:dash:profile:isoff-on-demand:2011">
          <Period>
            <AdaptationSet contentType="video" mimeType="video/mp4">
              <Representation id="hd" bandwidth="9000000" codecs="avc1.64001f"><BaseURL>missing-hd.mp4</BaseURL><SegmentBase indexRange="0-10"/></Representation>
              <Representation id="sd" bandwidth="400000" codecs="\(original.adaptationSets[0].representations[0].codecs ?? "")" width="320" height="240">
                <BaseURL>video.mp4</BaseURL>
                <SegmentList timescale="1" duration="1">
                  <Initialization sourceURL="video_0/init.mp4"/>
                  \(ranges.map { "<SegmentURL mediaRange=\"\($0)\"/>" }.joined(separator: "\n          "))
                </SegmentList>
              </Representation>
            </AdaptationSet>
            <AdaptationSet contentType="audio" mimeType="audio/mp4" lang="en">
              <Representation id="a" bandwidth="96000" codecs="mp4a.40.2" audioSamplingRate="48000">
                <BaseURL>audio.mp4</BaseURL>
                <SegmentBase indexRange="0-100"><Initialization range="0-\(audioWhole.count > 600 ? 599 : 0)"/></SegmentBase>
              </Representation>
            </AdaptationSet>
          </Period>
        </MPD>
        """
        try mpd.write(to: package.appendingPathComponent("list.mpd"), atomically: true, encoding: .utf8)
        let manager = try await world.manager()
        let asset = try await manager.add(url: world.origin.url("asset/list.mpd"), id: "list", options: .init(maxVideoBitrate: 1_000_000))
        #expect(!asset.plan.resources.contains { $0.url.contains("missing-hd") })
        #expect(await manager.run().allComplete)
        #expect(!world.origin.log.contains { $0.path.contains("missing-hd") })
        let directory = world.assetDirectory("list")
        // Each ranged piece is the origin's slice; SegmentBase's file is whole.
        for (index, range) in ranges.enumerated() {
            let bounds = range.split(separator: "-").compactMap { Int($0) }
            let piece = try await TestMedia.contents(of: directory.appendingPathComponent("video.\(bounds[0])-\(bounds[1] - bounds[0] + 1).mp4"))
            #expect(piece == videoWhole.subdata(in: bounds[0]..<(bounds[1] + 1)), "piece \(index)")
        }
        #expect(try await TestMedia.contents(of: directory.appendingPathComponent("audio.mp4")) == audioWhole)
        // The local MPD needs no ranges and names only files that exist.
        let local = try DASHManifest(parsing: String(contentsOfFile: try await manager.localPath("list"), encoding: .utf8))
        let list = try #require(local.adaptationSets.first?.representations.first?.segmentList)
        #expect(list.segments.count == ranges.count && list.segments.allSatisfy { $0.range == nil })
        for segment in list.segments {
            #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent(segment.url ?? "").path))
        }
        #expect(local.adaptationSets.first?.representations.count == 1)
        #expect(local.adaptationSets.last?.representations.first?.baseURL == "audio.mp4")
        await manager.close()
    }

    @Test("Smooth Streaming: quality levels by max bitrates, every fragment, the local manifest keeps only the chosen levels")
    func smooth() async throws {
        let world = try await DownloadWorld.make("smooth", format: .cmaf)
        defer { world.origin.stop() }
        let package = world.site.appendingPathComponent("asset")
        let mpd = try DASHManifest(parsing: String(contentsOf: package.appendingPathComponent("manifest.mpd"), encoding: .utf8))
        var streams = ""
        for (set, type, levels) in [(mpd.adaptationSets[0], "video", [300_000, 900_000]), (mpd.adaptationSets[1], "audio", [64_000, 128_000])] {
            let template = try #require(set.representations[0].segmentTemplate)
            let segments = try template.segments(presentationDuration: mpd.duration)
            let chosen = levels[0]
            for (index, segment) in segments.enumerated() {
                let source = package.appendingPathComponent("\(type)_0/segment_\(index + 1).m4s")
                let target = package.appendingPathComponent("smooth/QualityLevels(\(chosen))/Fragments(\(type)=\(segment.time))")
                try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.copyItem(at: source, to: target)
            }
            streams += "<StreamIndex Type=\"\(type)\" Name=\"\(type)\" TimeScale=\"\(template.timescale)\" Url=\"QualityLevels({bitrate})/Fragments(\(type)={start time})\" Chunks=\"\(segments.count)\">\n"
            streams += levels.enumerated().map { "<QualityLevel Index=\"\($0.offset)\" Bitrate=\"\($0.element)\" FourCC=\"\(type == "video" ? "H264" : "AACL")\"/>" }.joined(separator: "\n")
            streams += segments.map { "<c t=\"\($0.time)\" d=\"\($0.duration)\"/>" }.joined(separator: "\n") + "\n</StreamIndex>\n"
        }
        let timescale = mpd.adaptationSets[0].representations[0].segmentTemplate?.timescale ?? 1
        let manifest = "<?xml version=\"1.0\"?>\n<SmoothStreamingMedia MajorVersion=\"2\" MinorVersion=\"2\" TimeScale=\"\(timescale)\" Duration=\"\(UInt64((mpd.duration ?? 6) * Double(timescale)))\">\n\(streams)</SmoothStreamingMedia>\n"
        try manifest.write(to: package.appendingPathComponent("smooth/Manifest"), atomically: true, encoding: .utf8)

        let manager = try await world.manager()
        let asset = try await manager.add(url: world.origin.url("asset/smooth/Manifest"), id: "smooth",
                                          options: .init(maxVideoBitrate: 500_000, maxAudioBitrate: 100_000))
        #expect(asset.plan.format == .smooth)
        #expect(await manager.run().allComplete)
        try world.expectMediaMatchesOrigin("smooth", originDirectory: "asset/smooth")
        #expect(!world.origin.log.contains { $0.path.contains("900000") || $0.path.contains("128000") })
        let local = try SmoothManifest(parsing: String(contentsOfFile: try await manager.localPath("smooth"), encoding: .utf8))
        #expect(local.streams.map { $0.qualityLevels.map(\.bitrate) } == [[300_000], [64_000]])
        #expect(local.streams[0].fragmentTimes == (try SmoothManifest(parsing: manifest)).streams[0].fragmentTimes)
        let progress = try await manager.progress("smooth")
        #expect(progress.isReadyToPlay && abs(progress.cachedDuration - progress.totalDuration) < 0.1)
        await manager.close()
    }

    @Test("single files: permitted MIME types download; others are refused at enqueue or fail fatally; a size change is a warning")
    func singleFile() async throws {
        let world = try await DownloadWorld.make("file")
        defer { world.origin.stop() }
        let input = try await TestMedia.make("engine-source-6", seconds: 6)
        try FileManager.default.copyItem(at: input, to: world.site.appendingPathComponent("movie.mp4"))
        let bytes = try await TestMedia.contents(of: input)
        let manager = try await world.manager()
        let log = await EventLog(manager)
        let asset = try await manager.add(url: world.origin.url("movie.mp4"), id: "movie")
        #expect(asset.plan.format == .file && asset.plan.expectedBytes == bytes.count)
        #expect(await manager.run().allComplete)
        #expect(try await TestMedia.contents(of: URL(fileURLWithPath: try await manager.localPath("movie"))) == bytes)
        #expect(try await manager.progress("movie").expectedBytes == Int64(bytes.count))

        // A type outside the list is refused at enqueue.
        world.origin.inject(.contentType("application/zip"), on: "movie.mp4")
        await #expect(throws: DownloadError.mimeNotPermitted(url: world.origin.url("movie.mp4"), mimeType: "application/zip")) {
            try await manager.add(url: world.origin.url("movie.mp4"), id: "zip")
        }
        // ... and is fatal when it changes after enqueue: blocked at once, no retry.
        try await manager.add(url: world.origin.url("movie.mp4"), id: "changed")
        world.origin.inject(.contentType("application/zip"), on: "movie.mp4", times: -1)
        _ = await manager.run()
        let changed = try await manager.asset("changed")
        #expect(changed.state == .blocked && changed.retryCount == 0)
        #expect(changed.failure == .mimeType(url: world.origin.url("movie.mp4"), mimeType: "application/zip"))
        #expect(await log.errors.last.map { $0.1 } == false)
        world.origin.clearFaults()

        // A body that disagrees with the size announced at enqueue completes with a warning.
        try await manager.add(url: world.origin.url("movie.mp4"), id: "resized")
        world.origin.inject(.body(Array(bytes.prefix(1000))), on: "movie.mp4")
        _ = await manager.run()
        #expect(try await manager.asset("resized").state == .complete)
        let warnings = await log.warnings
        #expect(warnings.contains { $0.contains("1000 bytes on disk") })
        await manager.close()
    }

    @Test("refused at enqueue with a clear error: live streams, unknown formats, unreachable URLs, bad IDs, duplicates")
    func refusals() async throws {
        let world = try await DownloadWorld.make("refuse")
        defer { world.origin.stop() }
        try "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nasset/video_0/segment_1.ts\n".write(to: world.site.appendingPathComponent("live.m3u8"), atomically: true, encoding: .utf8)
        try "<?xml version=\"1.0\"?><MPD type=\"dynamic\"><Period/></MPD>".write(to: world.site.appendingPathComponent("live.mpd"), atomically: true, encoding: .utf8)
        try "<!DOCTYPE html><html></html>".write(to: world.site.appendingPathComponent("page.html"), atomically: true, encoding: .utf8)
        let manager = try await world.manager()
        await #expect(throws: DownloadError.liveStream(world.origin.url("live.m3u8"))) { try await manager.add(url: world.origin.url("live.m3u8")) }
        await #expect(throws: DownloadError.liveStream(world.origin.url("live.mpd"))) { try await manager.add(url: world.origin.url("live.mpd")) }
        await #expect(throws: DownloadError.unknownFormat(world.origin.url("page.html"))) { try await manager.add(url: world.origin.url("page.html")) }
        await #expect(throws: DownloadError.fetch(.httpStatus(url: world.origin.url("nothing.m3u8"), status: 404))) {
            try await manager.add(url: world.origin.url("nothing.m3u8"))
        }
        await #expect(throws: DownloadError.self) { try await manager.add(url: "ftp://example.com/a.mp4") }
        await #expect(throws: DownloadError.self) { try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "../escape") }
        try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "one")
        await #expect(throws: DownloadError.duplicateID("one")) { try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "one") }
        #expect(try await manager.assets().map(\.id) == ["one"])
        await manager.close()
    }

    @Test("the queue holds at most its limit of assets (10,000 unless configured): one more is refused with queue-full before the origin is asked; a removal makes room")
    func queueLimit() async throws {
        #expect(DownloadManager.Configuration(dataDirectory: "/unused").maximumAssets == 10_000)
        let world = try await DownloadWorld.make("queue-limit")
        defer { world.origin.stop() }
        let manager = try await world.manager(maximumAssets: 2)
        for id in ["one", "two"] { _ = try await manager.add(url: world.origin.url("asset/master.m3u8"), id: id, paused: true) }
        let served = world.origin.log.count
        await #expect(throws: DownloadError.queueFull(2)) { try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "three") }
        #expect(world.origin.log.count == served, "the origin is not asked for an asset the queue cannot take")
        #expect(DownloadError.queueFull(2).code == "queue-full" && DownloadError.queueFull(2).httpStatus == 409)
        try await manager.remove("one")
        _ = try await manager.add(url: world.origin.url("asset/master.m3u8"), id: "three", paused: true)
        #expect(Set(try await manager.assets().map(\.id)) == ["two", "three"])
        await manager.close()
    }
}
