import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SatchelBytes
import SatchelHTTP
import Testing

/// The HTTP kit's pure parts, without a server: byte ranges, content types, problem+json.
@Suite("HTTP kit: ranges, types, problems")
struct HTTPValueTests {
    @Test("a Range header against a size: first-last, open-ended, suffix; past the end refused with the size; anything else ignored")
    func ranges() throws {
        #expect(try ByteRangeRequest.resolve("bytes=0-99", size: 1000) == 0...99)
        #expect(try ByteRangeRequest.resolve("bytes=900-", size: 1000) == 900...999)
        #expect(try ByteRangeRequest.resolve("bytes=-100", size: 1000) == 900...999)
        #expect(try ByteRangeRequest.resolve("bytes=500-5000", size: 1000) == 500...999, "an end past the size is the last byte")
        #expect(try ByteRangeRequest.resolve(nil, size: 1000) == nil)
        #expect(throws: RangeNotSatisfiable.self) { try ByteRangeRequest.resolve("bytes=1000-", size: 1000) }
    }

    @Test("the type of a streaming or web file by its name")
    func contentTypes() {
        #expect(ContentTypes.type(of: "a/master.m3u8") == "application/vnd.apple.mpegurl")
        #expect(ContentTypes.type(of: "manifest.mpd") == "application/dash+xml")
        #expect(ContentTypes.type(of: "v/segment_1.ts") == "video/mp2t")
        #expect(ContentTypes.type(of: "v/init.mp4") == "video/mp4")
    }

    @Test("a module's error as problem+json: its stable code in the type, its status, its detail; JSON with keys sorted")
    func problems() throws {
        struct Refusal: ProblemConvertible {
            var code: String { "key-held" }
            var httpStatus: Int { 409 }
            var description: String { "the key belongs to another asset" }
        }
        let problem = Problem(any: Refusal())
        #expect(problem.status.code == 409 && problem.type == "key-held" && problem.detail == "the key belongs to another asset")
        #expect(problem.document.type == ProblemDocument.typeBase + "key-held")
        let json = String(decoding: problem.document.json, as: UTF8.self)
        #expect(json.hasPrefix("{\"detail\":") && json.contains("\"status\":409"), "\(json)")
    }
}

/// The bearer token of a request's `Authorization` header, as every license route reads it.
@Suite("HTTP kit: the bearer token")
struct BearerTokenTests {
    static func token(_ header: String?) -> String? {
        var fields = HTTPFields()
        if let header { fields[.authorization] = header }
        let head = HTTPRequest(method: .post, scheme: "http", authority: "127.0.0.1", path: "/clearkey/license", headerFields: fields)
        return Request(head: head, body: RequestBody(buffer: ByteBuffer())).bearerToken
    }

    @Test("\"Bearer\" in any case and a space, spaces around the token ignored; any other scheme, no space, or no token is none")
    func bearer() {
        #expect(Self.token("Bearer abc.def-ghi") == "abc.def-ghi")
        #expect(Self.token("bearer   abc  ") == "abc")
        #expect(Self.token("BEARER abc") == "abc")
        #expect(Self.token("BeArEr a b") == "a b")
        for header in ["Bearerabc", "Basic abc", "Bearer    ", "Bearer", "Bearer\tabc", "Beare abc", "Bearen abc", "xBearer abc"] {
            #expect(Self.token(header) == nil, "\(header)")
        }
        #expect(Self.token(nil) == nil)
    }
}
