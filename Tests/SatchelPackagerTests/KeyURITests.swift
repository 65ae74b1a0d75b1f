import Foundation
import SatchelBytes
import SatchelMedia
import SatchelPackager
import SatchelProtection
import Testing

/// Key URIs enter playlists as quoted strings: a value that could close the quote or start a line of its own is
/// refused where it enters (the options, a CPIX document), so no packaging writes an injected tag.
@Suite struct KeyURITests {
    static let injections = ["skd://k\"\n#EXT-X-INJECTED:1", "skd://k\",X-INJECTED=\"1", "skd://k\r#EXT-X-INJECTED:1", "skd://k\u{7F}"]

    /// The message of the invalid-options refusal `body` throws, nil when it throws none.
    func refusal(_ body: () throws(PackagerError) -> Void) -> String? {
        do { try body() } catch { if case .invalidOptions(let message) = error { return message } }
        return nil
    }

    @Test("--key-uri and --fairplay-uri with a quote or a control character are refused with what to do; an ordinary URI with {kid} is taken")
    func options() throws {
        for uri in Self.injections {
            let fairPlay = PackageOptions(inputs: ["in.mp4"], output: "out", format: .hlsTS, scheme: .sampleAES, fairPlayURI: uri)
            #expect(refusal { () throws(PackagerError) in try fairPlay.validate() } == "--fairplay-uri holds a double quote or a control character, which a playlist cannot carry: percent-encode them")
            let identity = PackageOptions(inputs: ["in.mp4"], output: "out", format: .hlsTS, scheme: .aes128, keyURI: uri.replacingOccurrences(of: "skd", with: "https"))
            #expect(refusal { () throws(PackagerError) in try identity.validate() } == "--key-uri holds a double quote or a control character, which a playlist cannot carry: percent-encode them")
        }
        try PackageOptions(inputs: ["in.mp4"], output: "out", format: .hlsTS, scheme: .sampleAES, keyURI: "https://keys.example/{kid}?a=1%22",
                           fairPlayURI: "skd://keys.example/{kid}").validate()
    }

    @Test("a CPIX document whose URIExtXKey holds a quote or a control character is refused")
    func cpix() throws {
        let key = try ContentKey(keyID: KeyID.random(), key: SecretBytes.random(16), iv: SecureRandom.bytes(16))
        for uri in Self.injections {
            let document = CPIXDocument(contentID: nil, keys: [CPIXDocument.Key(key)],
                                        systems: [CPIXDocument.System(keyID: key.keyID, systemID: DRMSystem.fairPlay.systemID, hlsKeyURI: uri)])
            do {
                _ = try CPIXDocument(xml: try document.xml())
                Issue.record("read a URIExtXKey of \(uri.debugDescription)")
            } catch {
                #expect(error.code == "invalid-cpix" && (error.description.contains("cannot carry") || error.description.contains("one line")), "\(error)")
            }
        }
    }
}
