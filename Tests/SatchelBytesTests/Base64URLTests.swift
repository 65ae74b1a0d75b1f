import Foundation
import Testing
import SatchelBytes

/// Base64url (RFC 4648 §5) as JWK and W3C Clear Key use it, checked against Foundation's standard base64.
@Suite("Base64url")
struct Base64URLTests {
    /// Foundation's base64 turned into the URL alphabet without padding: the reference.
    static func reference(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test("RFC 4648's vectors in the URL alphabet, without padding")
    func vectors() {
        let cases = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in cases {
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
        #expect(Base64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
    }

    @Test("every length from 0 to 200 of pseudo-random bytes: the same text as Foundation's, and back; padded and standard-alphabet forms read too")
    func againstFoundation() {
        var state: UInt64 = 0x5A7C_4E1B
        for length in 0...200 {
            let bytes = (0..<length).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return UInt8(truncatingIfNeeded: state >> 56)
            }
            let encoded = Base64URL.encode(bytes)
            #expect(encoded == Self.reference(bytes))
            #expect(Base64URL.decode(encoded) == bytes)
            #expect(Base64URL.decode(Data(bytes).base64EncodedString()) == bytes)
        }
    }

    @Test("bad input is nil: a character outside both alphabets, padding inside or too long, an impossible length")
    func invalid() {
        for text in ["Zg=v", "Zm9v!", "Z", "Zm9vY", "Zg=", "Zg===", "Zm9vYg====", "Zm 9v", "é"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
        }
    }
}
