import Foundation
import SatchelTestSupport
import Testing

/// Seed 003's expire-after-play ("EAP … the asset expires this long after it was first played") started by a
/// playback session: the first media bytes the proxy sends start it, never a session opened, a playlist, or a HEAD.
@Suite(.serialized) struct ExpireAfterPlayTests {
    static func firstPlay(_ id: String, data: String) throws -> String? {
        let listed = try CLIRunner.run(["download", "list", "--data-dir", data, "--json"]).stdout
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.utf8)) as? [[String: Any]])
        let row = try #require(rows.first { $0["id"] as? String == id })
        return row["firstPlayAt"].map { "\($0)" }
    }

    @Test("a proxy session records a downloaded asset's first play, which starts its expire-after-play: not at the session's opening, a playlist or 10 HEADs of a segment; at the first segment sent, once; played again past the window, the asset is expired")
    func firstPlayStartsTheWindow() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("expire-after-play")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clip").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
            #expect(try CLIRunner.run(["download", "add", origin.url("clip/master.m3u8"), "--data-dir", data, "--id", "clip",
                                       "--expiry-after-play", "4"]).status == 0)
            #expect(try CLIRunner.run(["download", "run", "--data-dir", data]).status == 0)
        }
        let player = try await TestMedia.offloaded { try PlayCommandTests.Player(["clip", "--data-dir", data]) }
        let (before, after) = try await TestMedia.offloaded { () throws -> (String?, String?) in
            let master = String(decoding: try PlayCommandTests.fetch(player.url).body, as: UTF8.self)
            let mediaName = try #require(master.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let mediaURL = try #require(URL(string: String(mediaName), relativeTo: URL(string: player.url))).absoluteURL
            let media = String(decoding: try PlayCommandTests.fetch(mediaURL.absoluteString).body, as: UTF8.self)
            let segment = try #require(media.split(separator: "\n").first { !$0.hasPrefix("#") && !$0.isEmpty })
            let segmentURL = mediaURL.deletingLastPathComponent().appendingPathComponent(String(segment)).absoluteString
            for _ in 0..<10 { #expect(try OriginCommandTests.request(segmentURL, method: "HEAD").status == 200) }
            let before = try Self.firstPlay("clip", data: data)
            #expect(try PlayCommandTests.fetch(segmentURL).status == 200)
            return (before, try Self.firstPlay("clip", data: data))
        }
        #expect(before == nil, "no play before media is sent: \(before ?? "")")
        let started = try #require(after, "the first segment sent is the first play")
        _ = try await TestMedia.offloaded { player.stop() }
        // Played again: the first play stays the first; past the window the asset is expired.
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["play", "clip", "--data-dir", data, "--exec", "true"]).status == 0)
            #expect(try Self.firstPlay("clip", data: data) == started, "the first play counts, not the latest")
        }
        try await Task.sleep(for: .seconds(5))
        try await TestMedia.offloaded { () throws -> Void in
            let late = try CLIRunner.run(["play", "clip", "--data-dir", data, "--exec", "true"])
            #expect(late.status != 0 && late.stderr.contains("expired"), "\(late.stderr)")
        }
    }
}
