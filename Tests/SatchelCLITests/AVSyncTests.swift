import Foundation
import SatchelTestSupport
import Testing

/// Audio and video stay where the source puts them (a B-frame delay in the video, AAC priming in the audio, both
/// said by the source's edit lists): in every package Satchel writes and every path through its proxy, the first
/// audio and video presentation times (ffprobe) are the source's within 1 ms — CMAF as they are, MPEG-TS (which
/// adds its own start offset) apart from each other as in the source.
@Suite(.serialized) struct AVSyncTests {
    static func expectSync(_ label: String, _ made: (video: Double, audio: Double), _ source: (video: Double, audio: Double), absolute: Bool) {
        if absolute {
            #expect(abs(made.video - source.video) <= 0.001 && abs(made.audio - source.audio) <= 0.001, "\(label): \(made) vs the source's \(source)")
        }
        #expect(abs((made.video - made.audio) - (source.video - source.audio)) <= 0.001, "\(label): video − audio \(made.video - made.audio) s, source \(source.video - source.audio) s")
    }

    /// The presentation time of the first decoded video frame and audio buffer GStreamer plays from `url` (seconds).
    static func gstreamerFirstTimestamps(_ url: String) throws -> (video: Double, audio: Double) {
        try TestMedia.require("gst-launch-1.0")
        let out = try TestMedia.run("gst-launch-1.0", ["-v", "uridecodebin", "uri=\(url)", "name=d",
                                                       "d.", "!", "queue", "!", "video/x-raw", "!", "identity", "name=video", "silent=false", "!", "fakesink",
                                                       "d.", "!", "queue", "!", "audio/x-raw", "!", "identity", "name=audio", "silent=false", "!", "fakesink"])
        var first: [String: Double] = [:]
        for line in out.split(separator: "\n") {
            // "/GstPipeline:pipeline0/GstIdentity:video: last-message = chain   ******* (video:sink) (… bytes, dts: …, pts: 0:00:00.080000000, …"
            guard let kind = ["video", "audio"].first(where: { line.contains("GstIdentity:\($0):") }), first[kind] == nil,
                  let range = line.range(of: "pts: ") else { continue }
            let clock = line[range.upperBound...].prefix { $0 != "," && $0 != " " }.split(separator: ":").compactMap { Double($0) }
            guard clock.count == 3 else { continue }
            first[kind] = clock[0] * 3600 + clock[1] * 60 + clock[2]
        }
        guard let video = first["video"], let audio = first["audio"] else { throw TestMedia.ToolError(message: "GStreamer played no video or no audio from \(url)") }
        return (video, audio)
    }

    @Test("packages (CMAF clear and cbcs with an edit list each, MPEG-TS, Smooth Streaming in GStreamer) and proxy paths (CMAF cbcs made clear, SAMPLE-AES TS made clear, DASH cenc and Smooth remuxed to TS) keep the source's audio–video offset within 1 ms")
    func everyPath() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("avsync")
        defer { server.stop(); origin.stop() }
        let source = try await TestMedia.offloaded { try TestMedia.firstTimestamps(input.path) }
        #expect(source.audio < source.video || source.audio < 0, "the source has AAC priming before its first video frame: \(source)")
        try await TestMedia.offloaded { () throws -> Void in
            try PlayCommandTests.package(input, into: site.appendingPathComponent("cmaf"), format: "cmaf")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("ts"), format: "hls-ts")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("cbcs"), format: "cmaf", scheme: "cbcs", asset: "cbcs", server: server, offline: true)
            try PlayCommandTests.package(input, into: site.appendingPathComponent("sample-aes"), format: "hls-ts", scheme: "sample-aes", asset: "sample-aes",
                                         server: server, offline: true)
            try PlayCommandTests.package(input, into: site.appendingPathComponent("cenc"), format: "cmaf", scheme: "cenc", asset: "cenc", server: server, offline: true)
            try PlayCommandTests.package(input, into: site.appendingPathComponent("smooth"), format: "smooth")
            Self.expectSync("CMAF", try TestMedia.firstTimestamps(site.appendingPathComponent("cmaf/master.m3u8").path), source, absolute: true)
            Self.expectSync("CMAF cbcs", try TestMedia.firstTimestamps(site.appendingPathComponent("cbcs/master.m3u8").path), source, absolute: true)
            Self.expectSync("MPEG-TS", try TestMedia.firstTimestamps(site.appendingPathComponent("ts/master.m3u8").path), source, absolute: false)
        }
        // Smooth Streaming has no edit lists: its fragments' times carry the offset (GStreamer's mssdemux, a second player).
        let gstreamer = try await TestMedia.offloaded { try Self.gstreamerFirstTimestamps(origin.url("smooth/Manifest")) }
        Self.expectSync("Smooth in GStreamer", gstreamer, source, absolute: false)
        let token = try await server.token()
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
        }
        for (label, entry) in [("proxy: CMAF cbcs made clear", "cbcs/master.m3u8"), ("proxy: SAMPLE-AES made clear", "sample-aes/master.m3u8"),
                               ("proxy: DASH cenc as TS", "cenc/manifest.mpd"), ("proxy: Smooth as TS", "smooth/Manifest")] {
            let rights = entry.hasPrefix("smooth") ? [] : ["--token", token]  // the Smooth package is clear: no license to ask for
            let player = try await TestMedia.offloaded { try PlayCommandTests.Player([origin.url(entry), "--data-dir", data] + rights) }
            guard !player.url.isEmpty else {
                Issue.record("\(label): the player did not start: \(player.stop().stderr)")
                continue
            }
            let played = try await TestMedia.offloaded { try TestMedia.firstTimestamps(player.url) }
            Self.expectSync(label, played, source, absolute: false)
            _ = try await TestMedia.offloaded { player.stop() }
        }
    }
}
