import Foundation

/// Where a listing goes on: the sort key of the last row a page gave, handed to the client as an opaque text (its
/// `after`). A listing is walked by its own stable order (keyset pagination, never an offset), so a walk costs the
/// same on its first page and its thousandth, and rows added or removed during the walk neither repeat nor hide
/// the rows around them.
public struct ListingCursor: Sendable, Equatable {
    /// The listing the cursor belongs to (`keys`, `devices`, …): a cursor of one listing is refused by another.
    public var listing: String
    /// The last row's sort key, one text per column of the order.
    public var key: [String]

    /// A cursor after the row whose sort key is `key`.
    public init(listing: String, key: [String]) {
        self.listing = listing
        self.key = key
    }

    /// The opaque text clients pass back as `after`.
    public var encoded: String {
        let data = (try? JSONEncoder().encode([listing] + key)) ?? Data()
        return Base64URL.encode(Array(data))
    }

    /// The longest `after` text a listing takes (a cursor is far shorter).
    public static let textLimit = 4096

    /// Reads a cursor that ``encoded`` wrote for `listing`, whose sort key has `columns` parts.
    public init(decoding text: String, listing: String, columns: Int) throws(ListingError) {
        guard text.utf8.count <= Self.textLimit, let bytes = Base64URL.decode(text),
              let parts = try? JSONDecoder().decode([String].self, from: Data(bytes)), let first = parts.first else {
            throw .badCursor("the cursor (after) is not one this server gave; start the listing again without it")
        }
        guard first == listing else { throw .badCursor("the cursor (after) belongs to the \(first.prefix(40)) listing, not to \(listing)") }
        guard parts.count == columns + 1 else { throw .badCursor("the cursor (after) is from another version of this listing; start again without it") }
        self.init(listing: listing, key: Array(parts.dropFirst()))
    }
}

/// What page of a listing to give: at most `limit` rows (1 to ``maximumLimit``; ``defaultLimit`` when not said),
/// after the cursor's row, and optionally only rows whose ID starts with `prefix`.
public struct ListingRequest: Sendable, Equatable {
    /// Rows a page gives when the client does not say.
    public static let defaultLimit = 100
    /// The most rows one page gives.
    public static let maximumLimit = 1000

    /// The rows to give, at most.
    public var limit: Int
    /// Where the previous page ended, or nil for the first page.
    public var after: ListingCursor?
    /// Only rows whose ID starts with this (the dashboard's search box), or nil.
    public var prefix: String?

    /// A request; `limit` is clamped to 1…``maximumLimit``.
    public init(limit: Int = ListingRequest.defaultLimit, after: ListingCursor? = nil, prefix: String? = nil) {
        self.limit = min(max(limit, 1), Self.maximumLimit)
        self.after = after
        self.prefix = prefix.flatMap { $0.isEmpty ? nil : String($0.prefix(Self.prefixLimit)) }
    }

    /// The longest `prefix` a client may give (an ID's start; IDs are at most this long).
    public static let prefixLimit = 200

    /// A request read from a client's `limit`, `after` and `prefix` texts for `listing` (whose order has `columns` parts):
    /// a limit that is not a whole number from 1 to ``maximumLimit``, a prefix longer than ``prefixLimit``, or a cursor that
    /// is not this listing's, is refused.
    public init(limit: String?, after: String?, prefix: String? = nil, listing: String, columns: Int) throws(ListingError) {
        var count = Self.defaultLimit
        if let limit {
            guard let value = Int(limit), (1...Self.maximumLimit).contains(value) else {
                throw .badLimit("limit is a whole number from 1 to \(Self.maximumLimit)")
            }
            count = value
        }
        if let prefix, prefix.unicodeScalars.count > Self.prefixLimit {
            throw .badPrefix("prefix is at most \(Self.prefixLimit) characters: the start of an ID")
        }
        let cursor: ListingCursor?
        if let after, !after.isEmpty { cursor = try ListingCursor(decoding: after, listing: listing, columns: columns) } else { cursor = nil }
        self.init(limit: count, after: cursor, prefix: prefix)
    }

    /// The cursor's sort key, or nil on the first page.
    public var afterKey: [String]? { after?.key }
}

/// One page of a listing: its rows, and the cursor of the next page (nil on the last).
public struct ListingPage<Item: Sendable>: Sendable {
    /// The rows, in the listing's order.
    public var items: [Item]
    /// The text to pass as `after` for the next page; nil when this page is the last.
    public var next: String?

    /// A page.
    public init(items: [Item], next: String?) {
        self.items = items
        self.next = next
    }

    /// A page from up to `limit + 1` rows read: the extra row, when there, only says that a next page exists.
    public init(reading rows: [Item], limit: Int, listing: String, key: (Item) -> [String]) {
        let items = Array(rows.prefix(limit))
        self.items = items
        next = rows.count > limit ? items.last.map { ListingCursor(listing: listing, key: key($0)).encoded } : nil
    }

    /// The same page with each row changed.
    public func map<Other: Sendable>(_ transform: (Item) throws -> Other) rethrows -> ListingPage<Other> {
        ListingPage<Other>(items: try items.map(transform), next: next)
    }
}

extension ListingPage: Encodable where Item: Encodable {}

/// Why a page cannot be given: a cursor or a limit the client got wrong. A 400.
public enum ListingError: ProblemConvertible, Equatable {
    /// The `after` text is not a cursor of this listing.
    case badCursor(String)
    /// The `limit` is out of range.
    case badLimit(String)
    /// The `prefix` is longer than any ID.
    case badPrefix(String)

    /// `bad-cursor`, `bad-limit` or `bad-prefix`.
    public var code: String {
        switch self {
        case .badCursor: "bad-cursor"
        case .badLimit: "bad-limit"
        case .badPrefix: "bad-prefix"
        }
    }

    /// 400.
    public var httpStatus: Int { 400 }

    public var description: String {
        switch self {
        case let .badCursor(reason), let .badLimit(reason), let .badPrefix(reason): reason
        }
    }
}
