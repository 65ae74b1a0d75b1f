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

    /// Prints a listing: one page (as `line`s, or as a JSON array with `json`), the next page's cursor said on stderr; or,
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
                print(String(decoding: try JSONCoding.encoder(.pretty).encode(answer.items), as: UTF8.self))
            } else {
                for item in answer.items { print(line(item)) }
            }
            if let next = answer.next { FileHandle.standardError.write(Data("more: --after \(next)\n".utf8)) }
            return
        }
    }
}

extension PagingOptions {
    /// Prints a listing of the operator API at `path` (with the filters in `query`): one page — lines, or with `json` the
    /// page's rows as a JSON array — its next cursor said on stderr; or, with `--all`, every page as JSON Lines.
    func walk<Item: Codable & Sendable>(_ client: OperatorClient, path: String, query: [(String, String)] = [], json: Bool, empty: String,
                                        line: (Item) -> String) async throws {
        var after = self.after
        while true {
            let pairs = query + [("limit", String(limit))] + (after.map { [("after", $0)] } ?? [])
            let page = try await client.call(.GET, path + "?" + pairs.map { "\($0.0)=\(OperatorClient.segment($0.1))" }.joined(separator: "&"),
                                             as: RemotePage<Item>.self)
            if all {
                let encoder = JSONCoding.encoder()
                for item in page.items { print(String(decoding: try encoder.encode(item), as: UTF8.self)) }
                guard let next = page.next else { return }
                after = next
                continue
            }
            try BackplaneOperatorCommand.output(page.items, json: json) { page.items.isEmpty ? empty : page.items.map(line).joined(separator: "\n") }
            if let next = page.next { FileHandle.standardError.write(Data("more: --after \(next)\n".utf8)) }
            return
        }
    }
}

/// A page of the operator API: its one array of rows (whatever the listing calls it) and `next`.
struct RemotePage<Item: Decodable>: Decodable {
    var items: [Item]
    var next: String?

    private struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        next = try container.decodeIfPresent(String.self, forKey: Key(stringValue: "next"))
        // The page's rows are its one array of rows (a page may carry other members beside it: the global limits).
        for key in container.allKeys where key.stringValue != "next" {
            if let rows = try? container.decode([Item].self, forKey: key) {
                items = rows
                return
            }
        }
        items = []
    }
}
