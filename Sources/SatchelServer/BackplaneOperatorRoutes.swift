import Foundation
import Hummingbird
import SatchelBackplane
import SatchelBytes
import SatchelHTTP

/// The backplane's operator API, under `/backplane/operator/`: the operator key (`serve --operator-key-file`) as a
/// bearer token, under the same budget of failures as dashboard sign-ins. A device is named by its device ID or
/// `ext:EXTERNAL-ID`.
///
/// `GET users`, `GET users/{user}`; `GET limits` (the global limits and a page of the users with their own),
/// `GET limits/{user}`, `PUT limits`; `GET devices[?user=]`, `GET|DELETE devices/{device}`,
/// `POST devices/{device}/enable|disable|wipe|kill`, `POST devices/{device}/delete-asset` (`{"assetID"}`);
/// `GET|PUT settings` (the fields given are put over those in force); `GET slots[?user=]` (the stream slots held);
/// `GET|POST feeds`, `GET|POST feeds/{feed}/items[?after=N]`, `GET feeds/{feed}/subscribers`;
/// `GET events[?device=&user=&kind=&asset=&since=&until=&limit=]`, `GET events/counts?by=kind|user|asset|device|reason[&…]`.
struct BackplaneOperatorRoutes: RouteGroup {
    let backplane: BackplaneService
    let sessions: AdminSessions
    static let base = "/backplane/operator"
    /// The most event counts one answer lists.
    static let listLimit = 10_000

    struct AssetBody: Codable { var assetID: String }
    /// Each listing's page: its rows and `next`, the cursor of the next page (absent on the last).
    struct DevicesAnswer: Codable { var devices: [BackplaneDevice]; var next: String? }
    struct UsersAnswer: Codable { var users: [BackplaneUser]; var next: String? }
    struct SlotsAnswer: Codable { var slots: [StreamSlot]; var next: String? }
    struct EventsAnswer: Codable { var events: [RecordedEvent]; var next: String? }
    struct CountsAnswer: Codable { var counts: [EventCount] }
    struct FeedsAnswer: Codable { var feeds: [Feed]; var next: String? }
    struct ItemsAnswer: Codable { var items: [FeedItem]; var next: String? }
    struct SubscribersAnswer: Codable { var subscriptions: [Subscription]; var next: String? }
    struct FeedBody: Codable { var feedID: String; var title: String }
    struct ItemBody: Codable {
        var assetID: String
        var url: String?
        var title: String?
        var published: Date?
        var expires: Date?
        var metadata: [String: String]?
    }

    func register(on router: Router<SatchelRequestContext>) {
        let group = router.group(RouterPath(Self.base)).add(middleware: OperatorKeyMiddleware(sessions: sessions))
        group.get("users") { request, _ in
            let page = try await backplane.store.users(try Self.page(request, listing: backplaneUsersListing))
            var users: [BackplaneUser] = []
            for user in page.items { users.append(try await backplane.user(user)) }
            return try Response.json(UsersAnswer(users: users, next: page.next))
        }
        group.get("users/{user}") { _, context in
            try Response.json(try await backplane.user(try Self.parameter("user", context)))
        }
        group.get("limits") { request, _ in
            try Response.json(try await backplane.store.limits(try Self.page(request, listing: backplaneLimitsListing)))
        }
        group.get("limits/{user}") { _, context in
            let user = try Self.parameter("user", context)
            guard !user.isEmpty, user.utf8.count <= 200 else { throw BackplaneError.badRequest("a user is 1 to 200 bytes") }
            let (global, own) = try await backplane.store.limits(of: user)
            return try Response.json(LimitsView(global: global, user: user, own: own))
        }
        group.put("limits") { request, _ in
            let body = try await Self.decode(BackplaneLimitsBody.self, request)
            if let user = body.user, user.isEmpty || user.utf8.count > 200 { throw BackplaneError.badRequest("a user is 1 to 200 bytes") }
            try await backplane.store.setLimits(body.limits, user: body.user)
            let (global, own) = try await backplane.store.limits(of: body.user ?? "")
            return try Response.json(LimitsView(global: global, user: body.user, own: body.user == nil ? nil : own))
        }
        group.get("devices") { request, _ in
            let user = request.uri.queryParameters.get("user")
            let page = try await backplane.store.devices(user: user, page: try Self.page(request, listing: BackplaneDevice.listing))
            return try Response.json(DevicesAnswer(devices: page.items, next: page.next))
        }
        group.get("devices/{device}") { _, context in
            try Response.json(try await backplane.store.device(try Self.reference(context)))
        }
        group.delete("devices/{device}") { _, context in
            try Response.json(try await backplane.store.delete(try Self.reference(context)))
        }
        for (verb, enabled) in [("enable", true), ("disable", false)] {
            group.post("devices/{device}/\(verb)") { _, context in
                try Response.json(try await backplane.setDownloadEnabled(try Self.reference(context), enabled))
            }
        }
        for (verb, action) in [("wipe", BackplaneCommand.Action.wipe), ("kill", .kill)] {
            group.post("devices/{device}/\(verb)") { _, context in
                try Response.json(try await backplane.issue(action, to: try Self.reference(context)), status: .created)
            }
        }
        group.post("devices/{device}/delete-asset") { request, context in
            let body = try await Self.decode(AssetBody.self, request)
            guard !body.assetID.isEmpty, body.assetID.utf8.count <= 200 else { throw BackplaneError.badRequest("assetID is 1 to 200 bytes") }
            return try Response.json(try await backplane.issue(.deleteAsset(body.assetID), to: try Self.reference(context)), status: .created)
        }
        group.get("slots") { request, _ in
            let user = request.uri.queryParameters.get("user")
            let page = try await backplane.slots.slots(user: user, at: backplane.now, page: try Self.page(request, listing: StreamSlot.listing))
            return try Response.json(SlotsAnswer(slots: page.items, next: page.next))
        }
        group.get("feeds") { request, _ in
            let page = try await backplane.feeds.feeds(try Self.page(request, listing: Feed.listing))
            return try Response.json(FeedsAnswer(feeds: page.items, next: page.next))
        }
        group.post("feeds") { request, _ in
            let body = try await Self.decode(FeedBody.self, request)
            return try Response.json(try await backplane.feeds.create(body.feedID, title: body.title, at: backplane.now), status: .created)
        }
        group.get("feeds/{feed}/items") { request, context in
            let page = try await backplane.feeds.items(feed: try Self.parameter("feed", context), page: try Self.itemsPage(request))
            return try Response.json(ItemsAnswer(items: page.items, next: page.next))
        }
        group.post("feeds/{feed}/items") { request, context in
            let body = try await Self.decode(ItemBody.self, request)
            let item = FeedItem(feedID: try Self.parameter("feed", context), assetID: body.assetID, url: body.url, title: body.title,
                                published: body.published ?? backplane.now, expires: body.expires, metadata: body.metadata)
            let added = try await backplane.feeds.add(item)
            backplane.hub.wake(feed: added.feedID)
            return try Response.json(added, status: .created)
        }
        group.get("feeds/{feed}/subscribers") { request, context in
            let page = try await backplane.feeds.subscribers(feed: try Self.parameter("feed", context), page: try Self.page(request, listing: Subscription.listing))
            return try Response.json(SubscribersAnswer(subscriptions: page.items, next: page.next))
        }
        group.get("events") { request, _ in
            let page = try await backplane.events.events(try Self.eventQuery(request), page: try Self.page(request, listing: RecordedEvent.listing, columns: 2))
            return try Response.json(EventsAnswer(events: page.items, next: page.next))
        }
        group.get("events/counts") { request, _ in
            let by = request.uri.queryParameters.get("by") ?? "kind"
            guard let grouping = EventGrouping(rawValue: by) else { throw BackplaneError.badRequest("by is kind, user, asset, device or reason") }
            return try Response.json(CountsAnswer(counts: try await backplane.events.counts(try Self.eventQuery(request), by: grouping, limit: Self.listLimit)))
        }
        group.get("settings") { _, _ in try Response.json(try await backplane.store.settings()) }
        group.put("settings") { request, _ in
            try Response.json(try await backplane.updateSettings(try await Self.decode(BackplaneSettings.self, request)))
        }
    }

    /// The events a request's query selects: `device`, `user`, `kind`, `asset`, `since` and `until` (ISO 8601).
    static func eventQuery(_ request: Request) throws(BackplaneError) -> EventQuery {
        let parameters = request.uri.queryParameters
        func date(_ name: String) throws(BackplaneError) -> Date? {
            guard let text = parameters.get(name) else { return nil }
            guard let date = ISODate.date(text) else { throw .badRequest("\(name) is an ISO 8601 date such as 2026-11-27T10:00:00Z") }
            return date
        }
        var kind: DeviceEventKind?
        if let text = parameters.get("kind") {
            guard let known = DeviceEventKind(rawValue: text) else { throw .badRequest("kind is one of \(DeviceEventKind.allCases.map(\.rawValue).joined(separator: ", "))") }
            kind = known
        }
        return EventQuery(device: parameters.get("device"), user: parameters.get("user"), kind: kind, asset: parameters.get("asset"),
                          since: try date("since"), until: try date("until"))
    }

    /// The page a listing request asks for: `limit` (1 to 1,000; 100 when not given), `after` (the cursor the previous
    /// page ended with) and `prefix` (IDs that start with it).
    static func page(_ request: Request, listing: String, columns: Int = 1) throws(ListingError) -> ListingRequest {
        let parameters = request.uri.queryParameters
        return try ListingRequest(limit: parameters.get("limit"), after: parameters.get("after"), prefix: parameters.get("prefix"), listing: listing,
                               columns: columns)
    }

    /// A page of a feed's items: `after` is a cursor of the items listing, or an item's number (the items after it).
    static func itemsPage(_ request: Request) throws -> ListingRequest {
        let parameters = request.uri.queryParameters
        // A number's text is no longer than a cursor's (zeros in front included); a longer one is refused as a cursor.
        if let after = parameters.get("after"), after.utf8.count <= ListingCursor.textLimit, let sequence = Int64(after) {
            guard sequence >= 0 else { throw BackplaneError.badRequest("after is an item's number (0 or more) or the cursor a page ended with") }
            var page = try ListingRequest(limit: parameters.get("limit"), after: nil, listing: FeedItem.listing, columns: 1)
            page.after = ListingCursor(listing: FeedItem.listing, key: [String(sequence)])
            return page
        }
        return try page(request, listing: FeedItem.listing)
    }

    static func parameter(_ name: String, _ context: SatchelRequestContext) throws -> String {
        let raw = try context.parameters.require(name)
        return raw.removingPercentEncoding ?? raw
    }

    static func reference(_ context: SatchelRequestContext) throws -> DeviceReference {
        try DeviceReference(try parameter("device", context))
    }

    static func decode<Body: Decodable>(_ type: Body.Type, _ request: Request) async throws -> Body {
        do {
            return try await DeviceLicenseRoutes.decode(type, request)
        } catch {
            throw BackplaneError.badRequest("the body is not JSON of the documented shape")
        }
    }
}

/// Refuses an operator API request without the operator key as its bearer token (401; 429 once the budget of failed
/// attempts from its address is spent).
struct OperatorKeyMiddleware: RouterMiddleware {
    let sessions: AdminSessions

    func handle(_ request: Request, context: SatchelRequestContext,
                next: (Request, SatchelRequestContext) async throws -> Response) async throws -> Response {
        let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
        guard let key = request.bearerToken else { throw AdminError.wrongOperatorKey }
        if let refusal = await sessions.refusal(ofKey: key, from: address) {
            AdminRoutes.audit.notice("operator API refused: \(refusal.code)", metadata: ["address": .string(address)])
            if case let .tooManyLogins(wait) = refusal {
                throw Problem(status: .tooManyRequests, type: refusal.problemType, detail: refusal.problemDetail, headers: [.retryAfter: String(wait)])
            }
            throw refusal
        }
        return try await next(request, context)
    }
}
