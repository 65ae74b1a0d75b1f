import Foundation
import SatchelDownloads
import Testing

/// `permittedMimeTypes` / `--permitted-mime-types`: the default list, a list of one's own, and an explicit empty list.
@Suite("Download planning: permitted MIME types")
struct PermittedTypesTests {
    static func plan(_ contentType: String, _ permitted: [String]?) async throws -> DownloadPlan {
        let probe = DownloadPlanner.Probe(url: URL(string: "https://cdn.example/still.png")!, contentType: contentType, contentLength: 10, text: nil)
        return try await DownloadPlanner.plan(probe: probe, options: DownloadOptions(permittedMimeTypes: permitted)) { _ in "" }
    }

    @Test("the default refuses what is not media; a list of one's own permits it; an explicit empty list checks nothing")
    func lists() async throws {
        await #expect(throws: DownloadError.mimeNotPermitted(url: "https://cdn.example/still.png", mimeType: "image/png")) {
            try await Self.plan("image/png", nil)
        }
        #expect(try await Self.plan("image/png", ["image/*"]).resources.first?.permittedMimeTypes == ["image/*"])
        #expect(try await Self.plan("image/png; q=1", []).resources.count == 1)
        #expect(MIMEType.permits([], "text/html"), "an empty list is no check, also for the response itself")
        #expect(!MIMEType.permits(MIMEType.defaultPermitted, "text/html"))
    }

    @Test("--permitted-mime-types parses comma-separated types; empty text is the empty list; a malformed entry is refused")
    func parsing() throws {
        #expect(try MIMEType.parseList("") == [])
        #expect(try MIMEType.parseList(" Video/*, audio/mp4 ,") == ["video/*", "audio/mp4"])
        #expect(throws: DownloadError.self) { try MIMEType.parseList("video") }
        #expect(throws: DownloadError.self) { try MIMEType.parseList("a/b/c") }
    }
}
