import Foundation
import SatchelMedia
import Testing

/// The lossless rewriters as values: only what the caller changes changes.
@Suite("Manifest rewriters: HLS and DASH, byte for byte")
struct ManifestRewriterTests {
    @Test("HLS: every URI is offered once, in order, with its site; the rest of each line is kept, CR LF included")
    func hlsSites() {
        let text = "#EXTM3U\r\n#EXT-X-KEY:METHOD=AES-128,X-URI=\"decoy\",URI=\"k.key\",IV=0x1\r\n#EXT-X-MAP:URI=\"i.mp4\"\r\n#EXTINF:4,\r\ns1.ts\r\n#EXTINF:4,\r\ns2.ts\r\n"
        var seen: [String] = []
        let result = HLSRewriter.rewrite(text) { reference -> HLSURIDecision in
            seen.append("\(reference.site):\(reference.uri):\(reference.segmentIndex.map(String.init) ?? "-")")
            return .replace("L/" + reference.uri)
        }
        #expect(seen == ["tag(\"EXT-X-KEY\"):k.key:-", "tag(\"EXT-X-MAP\"):i.mp4:0", "segment:s1.ts:0", "segment:s2.ts:1"])
        #expect(result == "#EXTM3U\r\n#EXT-X-KEY:METHOD=AES-128,X-URI=\"decoy\",URI=\"L/k.key\",IV=0x1\r\n#EXT-X-MAP:URI=\"L/i.mp4\"\r\n"
                + "#EXTINF:4,\r\nL/s1.ts\r\n#EXTINF:4,\r\nL/s2.ts\r\n")
        #expect(HLSRewriter.rewrite(text) { _ in .keep } == text, "keeping every URI gives the input back")
    }

    @Test("HLS: removing a variant takes its STREAM-INF line; attributes and byte ranges go only when asked")
    func hlsRemovals() {
        let master = "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,SUBTITLES=\"s\",AUDIO=\"a\"\nhi.m3u8\n#EXT-X-STREAM-INF:BANDWIDTH=2\nlo.m3u8\n"
        let kept = HLSRewriter.rewrite(master) { reference -> HLSURIDecision in
            reference.uri == "hi.m3u8" ? .replace("hi.m3u8", removeAttributes: ["SUBTITLES"]) : .remove
        }
        #expect(kept == "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1,AUDIO=\"a\"\nhi.m3u8\n")
        let media = "#EXTM3U\n#EXT-X-MAP:URI=\"a.mp4\",BYTERANGE=\"10@0\"\n#EXTINF:1,\n#EXT-X-BYTERANGE:5@10\na.mp4\n#EXTINF:1,\n#EXT-X-BYTERANGE:5\na.mp4\n"
        var ranges: [HLSByteRange?] = []
        let pieces = HLSRewriter.rewrite(media) { reference -> HLSURIDecision in
            ranges.append(reference.byteRange)
            return .replace("p\(ranges.count).mp4", dropByteRange: true)
        }
        #expect(ranges == [HLSByteRange(length: 10, offset: 0), HLSByteRange(length: 5, offset: 10), HLSByteRange(length: 5, offset: nil)])
        #expect(pieces == "#EXTM3U\n#EXT-X-MAP:URI=\"p1.mp4\"\n#EXTINF:1,\np2.mp4\n#EXTINF:1,\np3.mp4\n")
    }

    static let mpd = """
    <?xml version="1.0"?>
    <!-- comment -->
    <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:x="urn:x" type="static">
      <x:Thing x:a='single quoted'/>
      <BaseURL>http://cdn/a/</BaseURL>
      <Period>
        <AdaptationSet>
          <Representation id="1"><SegmentTemplate media="$Number$.m4s" initialization="init.mp4"/></Representation>
          <Representation id="2"/>
        </AdaptationSet>
      </Period>
    </MPD>
    """

    @Test("DASH: attributes and BaseURL text change, elements go with their lines, everything else stays; values are escaped")
    func dash() throws {
        let document = try MarkupSpans(Self.mpd)
        let result = DASHRewriter.rewrite(document) { document, id in
            let element = document.elements[id]
            switch element.name {
            case "BaseURL": return DASHElementEdit(text: "local & co/")
            case "SegmentTemplate": return DASHElementEdit(attributes: ["media": "seg/$Number$.m4s", "initialization": nil])
            case "Representation" where element.attribute("id")?.value == "2": return .remove
            default: return .keep
            }
        }
        let expected = Self.mpd.replacingOccurrences(of: "http://cdn/a/", with: "local &amp; co/")
            .replacingOccurrences(of: #"media="$Number$.m4s" initialization="init.mp4""#, with: #"media="seg/$Number$.m4s""#)
            .replacingOccurrences(of: "      <Representation id=\"2\"/>\n", with: "")
        #expect(result == expected)
        #expect(DASHRewriter.rewrite(document) { _, _ in .keep } == Self.mpd)
        #expect(document.elements.first { $0.name == "Thing" }?.attribute("a")?.value == "single quoted")
    }

    @Test("DASH: malformed or absurdly nested markup is a typed error")
    func dashHostile() {
        for bad in ["<MPD><Period></MPD>", "<MPD a=unquoted/>", "<MPD><!-- never ends", "</MPD>", "plain text",
                    String(repeating: "<a>", count: 65) + String(repeating: "</a>", count: 65)] {
            #expect(throws: MediaError.self, "\(bad.prefix(30))") { try MarkupSpans(bad) }
        }
    }
}
