import Foundation
import SatchelTestSupport
import Testing

/// Seed 000 §5.4.3 "Notification: Invalid content downloaded": "the device has roamed into a Wi-Fi hotspot which
/// requires some sort of user authentication … and an HTML page is returned instead". The proxy passes an online
/// clear segment on as it arrives; a page in its place is refused and reported, never handed to the player.
@Suite(.serialized) struct CaptivePortalTests {
    @Test("a hotspot's HTML page in place of an online clear segment (sent with the segment's own type) never reaches the player: the segment fails, an invalid-content event names it and says to check the connection; once the network is back the segment plays; an origin's error status is passed on, its notice naming the file's address and the status")
    func htmlInPlaceOfASegment() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("captive-portal")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
        }
        let segment = "clear/video_0/segment_1.ts"
        origin.inject(.htmlPage, on: segment, times: 1)
        origin.inject(.status(500), on: "clear/video_0/segment_0.ts", times: 1)
        let player = try await TestMedia.offloaded { try PlayCommandTests.Player([origin.url("clear/master.m3u8"), "--data-dir", data]) }
        let base = try #require(URL(string: player.url)).deletingLastPathComponent()
        let url = base.appendingPathComponent("video_0/segment_1.ts").absoluteString
        try await TestMedia.offloaded { () throws -> Void in
            let refused = try? PlayCommandTests.fetch(url)
            let text = String(decoding: refused?.body ?? [], as: UTF8.self).lowercased()
            #expect(!text.contains("<html"), "the page never reaches the player")
            let failed = refused.map { $0.status != 200 || $0.body.isEmpty } ?? true
            #expect(failed, "the segment fails: \(refused?.status ?? 0)")
            let healed = try PlayCommandTests.fetch(url)
            let stored = try Data(contentsOf: site.appendingPathComponent(segment))
            let same = healed.status == 200 && Data(healed.body) == stored
            #expect(same, "once the network is back, the segment as it is")
            #expect(try PlayCommandTests.fetch(base.appendingPathComponent("video_0/segment_0.ts").absoluteString).status == 500, "the origin's own status")
        }
        let stopped = try await TestMedia.offloaded { player.stop() }
        #expect(stopped.stderr.contains("invalid-content: clear/video_0/segment_1.ts: the origin sent an HTML page instead of media")
                && stopped.stderr.contains("check the network connection"), "\(stopped.stderr)")
        // Seed 000 §5.4.4 "Notification: Server error received": the notice names the file's address and the status.
        #expect(stopped.stderr.contains("server-error: clear/video_0/segment_0.ts (\(origin.url("clear/video_0/segment_0.ts"))): the origin answered 500"),
                "\(stopped.stderr)")
    }
}
