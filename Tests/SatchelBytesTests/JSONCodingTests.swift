import Foundation
import Testing
import SatchelBytes

/// The one place JSON coders are made: each date form writes exactly the text the stores and tokens already hold.
@Suite("JSON coding")
struct JSONCodingTests {
    struct Stamped: Codable, Equatable {
        var at: Date
        var url: String
    }

    static let value = Stamped(at: Date(timeIntervalSince1970: 1_800_000_000), url: "https://a/b")

    @Test("ISO 8601 for what people read, Unix seconds for rights and claims, Foundation's own seconds for the two stores first written in it; keys sorted, slashes unescaped")
    func dateForms() throws {
        func text(_ dates: JSONCoding.Dates) throws -> String { String(decoding: try JSONCoding.encoder(dates: dates).encode(Self.value), as: UTF8.self) }
        #expect(try text(.iso8601) == #"{"at":"2027-01-15T08:00:00Z","url":"https://a/b"}"#)
        #expect(try text(.unixSeconds) == #"{"at":1800000000,"url":"https://a/b"}"#)
        #expect(try text(.referenceSeconds) == #"{"at":821692800,"url":"https://a/b"}"#)
        for dates in [JSONCoding.Dates.iso8601, .unixSeconds, .referenceSeconds] {
            #expect(try JSONCoding.decoder(dates: dates).decode(Stamped.self, from: JSONCoding.encoder(dates: dates).encode(Self.value)) == Self.value)
        }
    }

    @Test("a record written by Foundation's default encoder (as the download index and the sealed device state were) still reads")
    func earlierStores() throws {
        let written = try JSONEncoder().encode(Self.value)
        #expect(try JSONCoding.decoder(dates: .referenceSeconds).decode(Stamped.self, from: written) == Self.value)
        #expect(throws: (any Error).self) { try JSONCoding.decoder().decode(Stamped.self, from: written) }
    }
}
