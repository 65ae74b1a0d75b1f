import Testing
@testable import SatchelDownloads

@Suite("Telling a manifest from media by its first bytes")
struct ManifestSniffingTests {
    @Test("a playlist, an MPD and a Smooth manifest (after a byte-order mark and blanks) are text; media beginning with '#' or '<' is not")
    func firstBytes() {
        let manifests = ["#EXTM3U\n#EXT-X-VERSION:3\n", "\u{FEFF}  \n#EXTM3U\n", "<?xml version=\"1.0\"?>\n<MPD xmlns=\"urn:mpeg:dash:schema:mpd:2011\">",
                         "\r\n<SmoothStreamingMedia MajorVersion=\"2\">\t<StreamIndex Name=\"vidéo\">", "#EXT"]
        for text in manifests { #expect(ManifestSniffing.looksLikeText(Array(text.utf8)), "\(text)") }
        var generator = SystemRandomNumberGenerator()
        for lead in ["#", "<", "#EXTM", "<MPD"] {
            // Random media after the lead: a comment line that is no playlist, or binary bytes after a '<'.
            let media = Array(lead.utf8) + [0x00, 0x01, 0x8F] + (0..<61).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(!ManifestSniffing.looksLikeText(media), "\(lead)")
        }
        #expect(!ManifestSniffing.looksLikeText(Array("# a comment, not a playlist\n".utf8)))
        #expect(!ManifestSniffing.looksLikeText(Array("   \n".utf8)))
        #expect(!ManifestSniffing.looksLikeText([0x00, 0x00, 0x00, 0x18] + Array("ftypisom".utf8)))
    }
}
