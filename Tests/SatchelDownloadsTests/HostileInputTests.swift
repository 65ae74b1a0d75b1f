import Foundation
import SatchelDownloads
import SatchelMedia
import SatchelTestSupport
import Testing

/// Hostile input that must end in a typed error, within bounded time and memory (issue 11 §3).
@Suite("Hostile input: bounded work, typed errors")
struct HostileInputTests {
    @Test("XML: an entity expansion bomb and ten thousand nested elements are refused, not expanded or recursed into")
    func xml() throws {
        let bomb = """
        <?xml version="1.0"?>
        <!DOCTYPE MPD [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
        <MPD type="static" mediaPresentationDuration="PT4S"><Period><AdaptationSet contentType="video"><Representation id="&c;" bandwidth="1"/></AdaptationSet></Period></MPD>
        """
        #expect(throws: MediaError.malformed("XML: document type declarations are not accepted")) { try DASHManifest(parsing: bomb) }
        #expect(throws: MediaError.malformed("XML: document type declarations are not accepted")) { try MarkupSpans(bomb) }
        let deep = "<MPD>" + String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000) + "</MPD>"
        #expect(throws: MediaError.self) { try DASHManifest(parsing: deep) }
        #expect(throws: (any Error).self) { try MarkupSpans(deep) }
    }

    @Test("a playlist of half a million lines (250,000 segments) parses; an asset of more files than the cap is refused")
    func millionLines() async throws {
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n"
        text.reserveCapacity(20_000_000)
        for index in 0..<250_000 { text += "#EXTINF:1,\n\(index).ts\n" }
        text += "#EXT-X-ENDLIST\n"
        let playlist = try HLSMediaPlaylist(parsing: text)
        #expect(playlist.segments.count == 250_000)
        let world = try await DownloadWorld.make("million")
        defer { world.origin.stop() }
        try text.write(to: world.site.appendingPathComponent("million.m3u8"), atomically: true, encoding: .utf8)
        let manager = try await world.manager()
        await #expect(throws: DownloadError.malformedManifest("more than 200000 files")) {
            try await manager.add(url: world.origin.url("million.m3u8"), id: "m")
        }
        await manager.close()
    }

    @Test("a master that lists itself, a redirect loop and a body that never ends are typed errors")
    func loops() async throws {
        let world = try await DownloadWorld.make("loops")
        defer { world.origin.stop() }
        let selfish = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000\nself.m3u8\n"
        try selfish.write(to: world.site.appendingPathComponent("self.m3u8"), atomically: true, encoding: .utf8)
        let manager = try await world.manager()
        await #expect(throws: DownloadError.self) { try await manager.add(url: world.origin.url("self.m3u8"), id: "self") }
        world.origin.inject(.redirect(world.origin.url("loop-b.m3u8")), on: "loop-a.m3u8", times: -1)
        world.origin.inject(.redirect(world.origin.url("loop-a.m3u8")), on: "loop-b.m3u8", times: -1)
        await #expect(throws: DownloadError.self) { try await manager.add(url: world.origin.url("loop-a.m3u8"), id: "loop") }
        world.origin.inject(.endless, on: "endless.m3u8", times: -1)
        let started = ContinuousClock.now
        // Refused at 32 MB (or, on a machine so loaded that the origin stalls, by the read timeout): never read on.
        do {
            try await manager.add(url: world.origin.url("endless.m3u8"), id: "endless")
            Issue.record("an endless body was accepted")
        } catch {
            switch error {
            case .fetch(.invalidContent(_, let reason)): #expect(reason == "manifest larger than 32 MB")
            case .fetch(.network): break
            default: Issue.record("unexpected \(error)")
            }
        }
        #expect(ContinuousClock.now - started < .seconds(120), "it ends (this is not a speed check: a loaded machine serves 32 MB slowly)")
        #expect(try await manager.assets().isEmpty)
        await manager.close()
    }
}
