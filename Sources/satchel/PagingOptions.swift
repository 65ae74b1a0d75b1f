import ArgumentParser
import Foundation
import SatchelBytes

/// `--limit`, `--after`, `--all`: how a listing command pages through a listing that can be as large as an operator's
/// catalogue or audience.
struct PagingOptions: ParsableArguments {
    @Option(help: "Rows a page holds (1 to 1,000; default 100).") var limit: Int = ListingRequest.defaultLimit
    @Option(help: "Where to go on: the cursor a previous page ended with.") var after: String?
    @Flag(help: "Every page, one JSON object a line (JSON Lines), for scripts.") var all = false

    func validate() throws {
        guard (1...ListingRequest.maximumLimit).contains(limit) else { throw ValidationError("--limit is a whole number from 1 to \(ListingRequest.maximumLimit)") }
    }

    /// Prints a listing: one page (as `line`s, or as JSON with `json`), its last line the cursor of the next page; or,
    /// with `--all`, every page as JSON Lines.
    func walk<Item: Encodable & Sendable>(listing: String, columns: Int, prefix: String? = nil, json: Bool,
                                          page: (ListingRequest) async throws -> ListingPage<Item>, line: (Item) -> String) async throws {
        var request = try ListingRequest(limit: String(limit), after: after, prefix: prefix, listing: listing, columns: columns)
        let encoder = JSONCoding.encoder()
        while true {
            let answer = try await page(request)
            if all {
                for item in answer.items { print(String(decoding: try encoder.encode(item), as: UTF8.self)) }
                guard let next = answer.next else { return }
                request.after = try ListingCursor(decoding: next, listing: listing, columns: columns)
                continue
            }
            if json {
                print(String(decoding: try JSONCoding.encoder(.pretty).encode(answer), as: UTF8.self))
            } else {
                for item in answer.items { print(line(item)) }
                if let next = answer.next { FileHandle.standardError.write(Data("more: --after \(next)\n".utf8)) }
            }
            return
        }
    }
}
