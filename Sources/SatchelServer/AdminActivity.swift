import Foundation
import SatchelBackplane
import SatchelBytes

/// The dashboard's activity pages, from the devices' events: downloads completed and
/// failed per hour, plays per hour, the top assets and the errors by reason over the last 24 hours; and one user's
/// devices with their downloads, plays and licenses.
struct AdminActivity {
    let backplane: BackplaneService
    let now: Date
    /// The most events a user's page reads (through the events' index by user).
    static let userEventLimit = 10_000

    /// The activity page: the charts and tables of the last 24 hours.
    func page() async throws -> [String: Any] {
        let hours = HourlyChart.hours(endingAt: now, count: 24)
        let since = hours.first ?? now
        // The charts read the hourly roll-ups kept as events arrive (a day of a busy service is millions of rows).
        let perHour = try await backplane.events.perHour(DeviceEventKind.allCases, hours: hours)
        let none = Array(repeating: 0, count: hours.count)
        let downloads = HourlyChart(hours: hours, series: [
            .init(name: "completed", cssClass: "s2", counts: perHour[.downloadCompleted] ?? none),
            .init(name: "failed", cssClass: "s5", counts: perHour[.downloadError] ?? none),
        ])
        let plays = HourlyChart(hours: hours, series: [.init(name: "plays", cssClass: "s1", counts: perHour[.playStart] ?? none)])
        let top = try await backplane.events.counts(EventQuery(kind: .playStart, since: since), by: .asset, limit: 10)
        let completed = Dictionary(uniqueKeysWithValues: try await backplane.events.counts(EventQuery(kind: .downloadCompleted, since: since), by: .asset,
                                                                                            limit: 10_000).map { ($0.key, $0.count) })
        let errors = try await backplane.events.counts(EventQuery(kind: .downloadError, since: since), by: .reason, limit: 20)
        let users = try await backplane.events.counts(EventQuery(since: since), by: .user, limit: 10)
        return [
            "downloadsChart": downloads.svg(label: "Downloads completed and failed per hour, last 24 hours"),
            "downloadsTotal": downloads.total,
            "downloadsLegend": [["name": "completed", "class": "s2"], ["name": "failed", "class": "s5"]],
            "playsChart": plays.svg(label: "Plays per hour, last 24 hours"),
            "playsTotal": plays.total,
            "topAssets": top.map { ["asset": $0.key.isEmpty ? "—" : $0.key, "plays": $0.count, "downloads": completed[$0.key] ?? 0] as [String: Any] },
            "errors": errors.map { ["reason": $0.key.isEmpty ? "unknown" : $0.key, "count": $0.count] as [String: Any] },
            "users": users.map { ["user": $0.key, "events": $0.count, "href": "/admin/users/" + AdminActivity.pathSegment($0.key)] as [String: Any] },
            "eventsTotal": perHour.values.reduce(0) { $0 + $1.reduce(0, +) },
        ]
    }

    /// One user's page: their devices (downloads completed, plays, licenses acquired, last event) and latest events.
    func user(_ user: String) async throws -> [String: Any] {
        let devices = try await backplane.store.devices(user: user, page: ListingRequest(limit: ListingRequest.maximumLimit)).items
        let events = try await backplane.events.events(EventQuery(user: user), limit: Self.userEventLimit)
        let byDevice = Dictionary(grouping: events, by: \.deviceID)
        let (global, own) = try await backplane.store.limits(of: user)
        let limits = global.overridden(by: own)
        let rows: [[String: Any]] = devices.map { device in
            let own = byDevice[device.deviceID] ?? []
            func count(_ kind: DeviceEventKind) -> Int { own.filter { $0.event.kind == kind }.count }
            return ["name": device.name.isEmpty ? "—" : device.name, "id": device.deviceID, "platform": device.platform.isEmpty ? "—" : device.platform,
                    "downloads": count(.downloadCompleted), "failed": count(.downloadError), "plays": count(.playStart),
                    "licenses": count(.licenseAcquired), "state": device.state.rawValue, "killed": device.state == .killed,
                    "downloadEnabled": device.downloadEnabled, "lastEvent": own.first.map { AdminPages.time($0.event.time) } ?? "never"]
        }
        let played = events.filter { $0.event.kind == .playStop }.compactMap(\.event.seconds).reduce(0, +)
        return [
            "user": user, "devices": rows, "deviceCount": rows.count, "empty": rows.isEmpty,
            "limits": Self.limitWords(limits),
            "stats": [
                ["label": "Devices", "value": rows.count, "note": "\(devices.filter(\.downloadEnabled).count) download-enabled"],
                ["label": "Downloads", "value": events.filter { $0.event.kind == .downloadCompleted }.count, "note": "completed"],
                ["label": "Plays", "value": events.filter { $0.event.kind == .playStart }.count, "note": played < 120 ? String(format: "%.0f s played", played) : String(format: "%.0f min played", played / 60)],
                ["label": "Licenses", "value": events.filter { $0.event.kind == .licenseAcquired }.count, "note": "acquired"],
            ] as [[String: Any]],
            "recent": events.prefix(20).map { recorded in
                ["time": AdminPages.time(recorded.event.time), "kind": recorded.event.kind.rawValue, "asset": recorded.event.assetID ?? "—",
                 "reason": recorded.event.reason ?? "", "device": recorded.deviceID] as [String: Any]
            },
        ]
    }

    /// A user's limits in words.
    static func limitWords(_ limits: BackplaneLimits) -> String {
        func value(_ number: Int?) -> String { number.map(String.init) ?? "no limit" }
        return "download-enabled devices: \(value(limits.maxDevices)) · downloads: \(value(limits.maxDownloads)) · streams at once: \(value(limits.maxStreams))"
    }

    /// `text` as one path segment (every byte but ASCII letters, digits and `-._~` percent-encoded).
    static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? ""
    }
}
