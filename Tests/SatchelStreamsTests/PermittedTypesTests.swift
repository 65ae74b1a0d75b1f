import Foundation
import SatchelStreams
import Testing

/// `permittedMimeTypes` / `--permitted-mime-types`: the default list, a list of one's own, and an explicit empty list.
@Suite("Download planning: permitted MIME types")
struct PermittedTypesTests {
    static func plan(_ contentType: String, _ permitted: [String]?) throws -> DownloadPlan {
        let probe = DownloadPlanner.Probe(url: URL(string: "https://cdn.example/still.png")!, contentType: contentType, contentLength: 10, text: nil)
        guard case let .plan(plan) = try DownloadPlanner.step(probe: probe, options: PlanOptions(permittedMimeTypes: permitted), documents: [:]) else {
            throw StreamError.invalidContent("a single file needs no other document")
        }
        return plan
    }

    @Test("the default refuses what is not media; a list of one's own permits it; an explicit empty list checks nothing")
    func lists() throws {
        #expect(throws: StreamError.mimeNotPermitted(url: "https://cdn.example/still.png", mimeType: "image/png")) {
            try Self.plan("image/png", nil)
        }
        #expect(try Self.plan("image/png", ["image/*"]).resources.first?.permittedMimeTypes == ["image/*"])
        #expect(try Self.plan("image/png; q=1", []).resources.count == 1)
        #expect(MIMEType.permits([], "text/html"), "an empty list is no check, also for the response itself")
        #expect(!MIMEType.permits(MIMEType.defaultPermitted, "text/html"))
    }

    @Test("--permitted-mime-types parses comma-separated types; empty text is the empty list; a malformed entry is refused")
    func parsing() throws {
        #expect(try MIMEType.parseList("") == [])
        #expect(try MIMEType.parseList(" Video/*, audio/mp4 ,") == ["video/*", "audio/mp4"])
        #expect(throws: StreamError.self) { try MIMEType.parseList("video") }
        #expect(throws: StreamError.self) { try MIMEType.parseList("a/b/c") }
    }
}
