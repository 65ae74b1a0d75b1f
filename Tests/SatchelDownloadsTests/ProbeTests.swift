import Foundation
import SatchelDownloads
import SatchelTestSupport
import Testing

/// The first request for a source: only its head is asked for, so a large media file is not sent whole to be dropped
/// (playing or downloading a 20 MB file began with megabytes the origin sent for nothing); a manifest longer than the
/// head is read whole.
@Suite("The probe asks for the head of a source")
struct ProbeTests {
    @Test("a large media file: one ranged request for its head, its size from Content-Range; a manifest past the head is read whole")
    func ranged() async throws {
        let site = try TestMedia.temporaryDirectory("probe")
        let media = TestMedia.mediaBytes(3 << 20)
        try Data(media).write(to: site.appendingPathComponent("film.mp4"))
        var playlist = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n"
        for index in 0..<4000 { playlist += "#EXTINF:2.000,\nsegment-\(index)-with-a-long-name.ts\n" }
        playlist += "#EXT-X-ENDLIST\n"
        try playlist.write(to: site.appendingPathComponent("long.m3u8"), atomically: true, encoding: .utf8)
        #expect(playlist.utf8.count > 2 * (64 << 10))
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        let fetcher = ResourceFetcher()

        let file = try await fetcher.probe(try #require(URL(string: origin.url("film.mp4"))), headers: [:], origins: .any)
        #expect(file.text == nil && file.contentLength == media.count)
        #expect(origin.log.map(\.range) == ["bytes=0-65535"], "\(origin.log.map(\.range))")

        let manifest = try await fetcher.probe(try #require(URL(string: origin.url("long.m3u8"))), headers: [:], origins: .any)
        #expect(manifest.text == playlist, "the whole manifest: \(manifest.text?.utf8.count ?? 0) of \(playlist.utf8.count) bytes")

        await fetcher.shutdown()
    }
}
