import Foundation
import SatchelStreams
import Testing

/// Planners never reach the network: given the documents they have, they answer the plan or the documents to fetch.
@Suite("Planning in steps")
struct PlanStepTests {
    static let master = URL(string: "https://cdn.example/show/master.m3u8")!
    static let masterText = """
        #EXTM3U
        #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="a",NAME="en",DEFAULT=YES,URI="audio/en.m3u8"
        #EXT-X-STREAM-INF:BANDWIDTH=800000,AUDIO="a"
        low/index.m3u8
        #EXT-X-STREAM-INF:BANDWIDTH=3000000,AUDIO="a"
        high/index.m3u8
        """
    static let media = "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\nsegment0.ts\n#EXTINF:6,\nsegment1.ts\n#EXT-X-ENDLIST\n"

    @Test("a master playlist asks for the chosen variant's and rendition's playlists, then plans with them")
    func master() throws {
        let probe = DownloadPlanner.Probe(url: Self.master, contentType: "application/vnd.apple.mpegurl", contentLength: nil, text: Self.masterText)
        let first = try DownloadPlanner.step(probe: probe, options: PlanOptions(maxBitrate: 1_000_000), documents: [:])
        let wanted = [URL(string: "https://cdn.example/show/low/index.m3u8")!, URL(string: "https://cdn.example/show/audio/en.m3u8")!]
        #expect(first == .fetch(wanted))
        // With one of the two, it still asks for the other.
        let partial = try DownloadPlanner.step(probe: probe, options: PlanOptions(maxBitrate: 1_000_000), documents: [wanted[0]: Self.media])
        #expect(partial == .fetch([wanted[1]]))
        guard case let .plan(plan) = try DownloadPlanner.step(probe: probe, options: PlanOptions(maxBitrate: 1_000_000),
                                                                documents: Dictionary(uniqueKeysWithValues: wanted.map { ($0, Self.media) })) else {
            Issue.record("no plan with every document")
            return
        }
        #expect(plan.mainPath == "master.m3u8")
        #expect(plan.manifests.map(\.path) == ["master.m3u8", "low/index.m3u8", "audio/en.m3u8"])
        #expect(Set(plan.resources.map(\.localPath)) == ["low/segment0.ts", "low/segment1.ts", "audio/segment0.ts", "audio/segment1.ts"])
    }

    @Test("a lone media playlist, a DASH MPD and a single file plan at once; text that is no manifest is refused")
    func direct() throws {
        let media = DownloadPlanner.Probe(url: URL(string: "https://cdn.example/a/index.m3u8")!, contentType: nil, contentLength: nil, text: Self.media)
        guard case .plan = try DownloadPlanner.step(probe: media, options: PlanOptions(), documents: [:]) else {
            Issue.record("a media playlist needs nothing else")
            return
        }
        let file = DownloadPlanner.Probe(url: URL(string: "https://cdn.example/trailer.mp4")!, contentType: "video/mp4", contentLength: 100, text: nil)
        #expect(try DownloadPlanner.step(probe: file, options: PlanOptions(), documents: [:])
                == .plan(DownloadPlan(format: .file, mainPath: "trailer.mp4", manifests: [],
                                      resources: [DownloadResource(url: "https://cdn.example/trailer.mp4", localPath: "trailer.mp4", kind: .file,
                                                                   expectedSize: 100, permittedMimeTypes: PlanOptions().permittedMimeTypes ?? MIMEType.defaultPermitted)],
                                      totalDuration: nil)))
        let page = DownloadPlanner.Probe(url: URL(string: "https://cdn.example/x")!, contentType: "text/plain", contentLength: nil, text: "hello")
        #expect(throws: StreamError.unknownFormat("https://cdn.example/x")) { try DownloadPlanner.step(probe: page, options: PlanOptions(), documents: [:]) }
    }
}
