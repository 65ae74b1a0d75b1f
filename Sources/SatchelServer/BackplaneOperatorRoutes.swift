import Foundation
import Hummingbird
import SatchelBackplane
import SatchelBytes
import SatchelHTTP

/// The backplane's operator API, under `/backplane/operator/`: the operator key (`serve --operator-key-file`) as a
/// bearer token, under the same budget of failures as dashboard sign-ins. A device is named by its device ID or
/// `ext:EXTERNAL-ID`.
///
/// `GET users`, `GET users/{user}`; `GET|PUT limits`; `GET devices[?user=]`, `GET|DELETE devices/{device}`,
/// `POST devices/{device}/enable|disable|wipe|kill`, `POST devices/{device}/delete-asset` (`{"assetID"}`);
/// `GET|PUT settings` (the fields given are put over those in force); `GET slots[?user=]` (the stream slots held);
/// `GET|POST feeds`, `GET|POST feeds/{feed}/items[?after=N]`, `GET feeds/{feed}/subscribers`;
/// `GET events[?device=&user=&kind=&asset=&since=&until=&limit=]`, `GET events/counts?by=kind|user|asset|device|reason[&…]`.
struct BackplaneOperatorRoutes: RouteGroup {
    let backplane: BackplaneService
    let sessions: AdminSessions
    static let base = "/backplane/operator"
    /// The most devices or users one answer lists.
    static let listLimit = 10_000

    struct AssetBody: Codable { var assetID: String }
    struct DevicesAnswer: Codable { var devices: [BackplaneDevice] }
    struct UsersAnswer: Codable { var users: [BackplaneUser] }
    struct SlotsAnswer: Codable { var slots: [StreamSlot] }
    struct EventsAnswer: Codable { var events: [RecordedEvent] }
    struct CountsAnswer: Codable { var counts: [EventCount] }
    struct FeedsAnswer: Codable { var feeds: [Feed] }
    struct ItemsAnswer: Codable { var items: [FeedItem] }
    struct SubscribersAnswer: Codable { var subscriptions: [Subscription] }
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
        group.get("users") { _, _ in
            let table = try await backplane.store.limits()
            let devices = Dictionary(grouping: try await backplane.store.devices(user: nil, limit: Self.listLimit), by: \.user)
            let users = try await backplane.store.users(limit: Self.listLimit).map {
                BackplaneUser(user: $0, limits: table.limits(for: $0), ownLimits: table.perUser[$0], devices: devices[$0] ?? [])
            }
            return try Response.json(UsersAnswer(users: users))
        }
        group.get("users/{user}") { _, context in
            try Response.json(try await backplane.user(try Self.parameter("user", context)))
        }
        group.get("limits") { _, _ in try Response.json(try await backplane.store.limits()) }
        group.put("limits") { request, _ in
            let body = try await Self.decode(BackplaneLimitsBody.self, request)
            if let user = body.user, user.isEmpty || user.utf8.count > 200 { throw BackplaneError.badRequest("a user is 1 to 200 bytes") }
            try await backplane.store.setLimits(body.limits, user: body.user)
            return try Response.json(try await backplane.store.limits())
        }
        group.get("devices") { request, _ in
            let user = request.uri.queryParameters.get("user")
            return try Response.json(DevicesAnswer(devices: try await backplane.store.devices(user: user, limit: Self.listLimit)))
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
            return try Response.json(SlotsAnswer(slots: try await backplane.slots.slots(user: user, at: backplane.now, limit: Self.listLimit)))
        }
        group.get("feeds") { _, _ in try Response.json(FeedsAnswer(feeds: try await backplane.feeds.feeds(limit: Self.listLimit))) }
        group.post("feeds") { request, _ in
            let body = try await Self.decode(FeedBody.self, request)
            return try Response.json(try await backplane.feeds.create(body.feedID, title: body.title, at: backplane.now), status: .created)
        }
        group.get("feeds/{feed}/items") { request, context in
            let after = try Self.cursor(request.uri.queryParameters.get("after"))
            return try Response.json(ItemsAnswer(items: try await backplane.feeds.items(feed: try Self.parameter("feed", context), after: after, limit: Self.listLimit)))
        }
        group.post("feeds/{feed}/items") { request, context in
            let body = try await Self.decode(ItemBody.self, request)
            let item = FeedItem(feedID: try Self.parameter("feed", context), assetID: body.assetID, url: body.url, title: body.title,
                                published: body.published ?? backplane.now, expires: body.expires, metadata: body.metadata)
            let added = try await backplane.feeds.add(item)
            backplane.hub.wake(feed: added.feedID)
            return try Response.json(added, status: .created)
        }
        group.get("feeds/{feed}/subscribers") { _, context in
            try Response.json(SubscribersAnswer(subscriptions: try await backplane.feeds.subscribers(feed: try Self.parameter("feed", context),
                                                                                                  limit: Self.listLimit)))
        }
        group.get("events") { request, _ in
            let parameters = request.uri.queryParameters
            let limit = try Self.limit(parameters.get("limit"))
            return try Response.json(EventsAnswer(events: try await backplane.events.events(try Self.eventQuery(request), limit: limit)))
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

    /// `after`: an item's sequence, 0 or more (default 0).
    static func cursor(_ text: String?) throws(BackplaneError) -> Int64 {
        guard let text else { return 0 }
        guard let value = Int64(text), value >= 0 else { throw .badRequest("after is an item's sequence: 0 or more") }
        return value
    }

    /// `limit`: 1 to 10,000 (default 1,000).
    static func limit(_ text: String?) throws(BackplaneError) -> Int {
        guard let text else { return 1_000 }
        guard let value = Int(text), (1...listLimit).contains(value) else { throw .badRequest("limit is 1 to \(listLimit)") }
        return value
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
