import Foundation
import SatchelBackplane
import SatchelBytes
import Hummingbird
import SatchelLicensing

/// The values each dashboard page renders, read from the key store, the audit and the device registry. Key IDs
/// are shown, never keys.
struct AdminPages {
    let console: AdminConsole
    /// The audit rows a page shows.
    static let auditLimit = 100
    /// The most device licenses the devices page reads to count each device's.
    static let chartLimit = 100_000

    private var now: Date { console.service.clock.now }

    /// Counts (estimated: never a count of a large table), the two hourly charts of the last 24 hours (from the hourly
    /// roll-ups, not the audit's rows), and the newest licenses.
    func overview() async throws -> [String: Any] {
        let counts = try await console.service.store.estimatedCounts()
        let hours = HourlyChart.hours(endingAt: now, count: 24)
        let issuedPerHour = try await console.service.store.issuedPerHour(types: Self.licenseTypes, hours: hours)
        let none = Array(repeating: 0, count: hours.count)
        let devices = try await console.registry?.listings.estimatedCounts() ?? (0, 0, 0)
        let deviceLicenses = try await console.registry?.listings.issuedPerHour(hours: hours) ?? (persistent: none, streaming: none)
        let families = [("FairPlay", "fairplay", "s1"), ("Clear Key", "clearkey", "s2"), ("AES-128", "aes-128", "s3"), ("Satchel devices", "satchel", "s4")]
        func sum(_ series: [[Int]]) -> [Int] { series.reduce(none) { zip($0, $1).map { $0 + $1 } } }
        let issued = HourlyChart(hours: hours, series: families.map { family in
            .init(name: family.0, cssClass: family.2, counts: sum(Self.licenseTypes.filter { $0.hasPrefix(family.1) }.map { issuedPerHour[$0] ?? none }))
        })
        let offline = sum([issuedPerHour["clearkey-persistent-license"] ?? none, deviceLicenses.persistent])
        let downloads = HourlyChart(hours: hours, series: [.init(name: "offline licenses", cssClass: "s4", counts: offline)])
        let recent = try await console.service.store.licenses(limit: 8)
        return [
            "stats": [
                ["label": "Assets", "value": counts.assets, "note": "\(counts.keys) key\(counts.keys == 1 ? "" : "s")"],
                ["label": "Licenses, 24 h", "value": issued.total, "note": "\(offline.reduce(0, +)) offline"],
                ["label": "Devices", "value": devices.0, "note": "\(devices.1) disabled"],
                ["label": "Device licenses", "value": devices.2, "note": "issued"],
            ] as [[String: Any]],
            "issuedChart": issued.svg(label: "Licenses issued per hour, last 24 hours"),
            "issuedLegend": families.map { ["name": $0.0, "class": $0.2] },
            "issuedTotal": issued.total,
            "downloadsChart": downloads.svg(label: "Offline licenses (downloads) per hour, last 24 hours"),
            "downloadsTotal": downloads.total,
            "recent": recent.map(Self.licenseRow),
        ]
    }

    /// The license types the audit records (``AuditFilter/type``).
    static let licenseTypes = ["fairplay", "fairplay-sync", "clearkey-temporary", "clearkey-persistent-license", "aes-128", "satchel"]

    /// A page of assets with their FairPlay asset IDs, key IDs and policies, by asset ID (`after`: the page's cursor;
    /// `q`: an asset ID prefix).
    func assets(query: Parameters) async throws -> [String: Any] {
        let search = query["q"].map { String($0.prefix(200)).trimmingCharacters(in: .whitespaces) } ?? ""
        let deleted = query["deleted"].map(String.init)
        let request = try ListingRequest(limit: nil, after: query["after"].map(String.init), prefix: search, listing: KeySummary.listing, columns: 2)
        let page = try await console.service.store.summaries(request)
        var order: [String] = []
        var byAsset: [String: [KeySummary]] = [:]
        for key in page.items {
            if byAsset[key.assetID] == nil { order.append(key.assetID) }
            byAsset[key.assetID, default: []].append(key)
        }
        let rows: [[String: Any]] = order.compactMap { asset in
            guard let group = byAsset[asset], let first = group.first else { return nil }
            var row: [String: Any] = ["asset": asset, "keyIDs": group.map(\.keyID), "policy": Self.policyWords(first.policy)]
            if !first.fairPlayAssetID.isEmpty, first.fairPlayAssetID != asset { row["fairPlay"] = first.fairPlayAssetID }
            return row
        }
        let counts = try await console.service.store.estimatedCounts()
        var values: [String: Any] = ["assets": rows, "count": counts.assets, "keyCount": counts.keys, "empty": rows.isEmpty, "search": search,
                                     "searching": !search.isEmpty]
        values["paging"] = Self.paging(base: "/admin/assets", next: page.next, atStart: request.after == nil, fields: ["q": search])
        // The address names what was deleted: an asset ID only, and only when it is indeed gone.
        if let deleted, PlayerRoutes.isAssetID(deleted), (try? await console.service.store.keys(asset: deleted)) == nil {
            values["flash"] = "Deleted \(deleted) and its keys: no new license is issued for it."
        }
        return values
    }

    /// A listing page's links: the next page's (its cursor) and the first page's, keeping the page's other `fields`.
    static func paging(base: String, next: String?, atStart: Bool, fields: [String: String]) -> [String: Any] {
        func link(_ extra: [String: String]) -> String {
            let query = fields.merging(extra) { _, new in new }.filter { !$0.value.isEmpty }.sorted { $0.key < $1.key }
                .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
            return query.isEmpty ? base : base + "?" + query
        }
        var paging: [String: Any] = [:]
        if let next { paging["next"] = link(["after": next]) }
        if !atStart { paging["first"] = link([:]) }
        return paging
    }

    /// A page of the audit, newest first, filtered by the query's `asset`, `subject`, `type` and `hours` (`after`: the
    /// page's cursor).
    func licenses(query: Parameters) async throws -> [String: Any] {
        func field(_ name: String) -> String? {
            guard let value = query[Substring(name)].map(String.init)?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
            return String(value.prefix(256))
        }
        let hours = field("hours").flatMap(Int.init).map { min(max($0, 1), 24 * 366) }
        let filter = AuditFilter(assetID: field("asset"), subject: field("subject"), type: field("type"),
                                 since: hours.map { now.addingTimeInterval(-Double($0) * 3600) })
        let request = try ListingRequest(limit: String(Self.auditLimit), after: field("after"), listing: IssuedLicense.listing, columns: 2)
        let page = try await console.service.store.licenses(matching: filter, page: request)
        let types = Self.licenseTypes
        let spans = [(1, "Last hour"), (24, "Last 24 hours"), (168, "Last 7 days"), (720, "Last 30 days")]
        let fields = ["asset": filter.assetID ?? "", "subject": filter.subject ?? "", "type": filter.type ?? "", "hours": hours.map(String.init) ?? ""]
        return [
            "rows": page.items.map(Self.licenseRow), "empty": page.items.isEmpty, "later": request.after != nil,
            "paging": Self.paging(base: "/admin/licenses", next: page.next, atStart: request.after == nil, fields: fields),
            "asset": filter.assetID ?? "", "subject": filter.subject ?? "",
            "types": types.map { ["value": $0, "selected": $0 == filter.type] as [String: Any] },
            "spans": spans.map { ["value": $0.0, "label": $0.1, "selected": $0.0 == hours] as [String: Any] },
            "filtered": filter != AuditFilter(),
        ]
    }

    /// A page of the registered devices (newest first), with their licenses counted and the backplane's state of each.
    func devices(query: Parameters) async throws -> [String: Any] {
        guard let registry = console.registry else { return ["unavailable": true, "empty": true] }
        let request = try ListingRequest(limit: nil, after: query["after"].map(String.init), listing: DeviceRecord.listing, columns: 1)
        let page = try await registry.listings.devices(request)
        let licenses = try await registry.listings.licenseCounts(devices: page.items.map(\.deviceID))
        let store = console.backplane?.store
        var global = BackplaneLimits.none
        var userLimits: [String: BackplaneLimits] = [:]
        var rows: [[String: Any]] = []
        for device in page.items {
            let own = licenses[device.deviceID] ?? (0, 0, 0)
            var row: [String: Any] = ["id": device.deviceID, "name": device.name ?? "—", "subject": device.subject,
                                      "userHref": "/admin/users/" + AdminActivity.pathSegment(device.subject),
                                      "registered": Self.time(device.registeredAt), "disabled": device.disabled, "licenses": own.issued,
                                      "active": own.active, "offline": own.offline]
            if let external = device.externalID, !external.isEmpty { row["externalID"] = external }
            if let store, let known = try? await store.device(.device(device.deviceID)) {
                if userLimits[known.user] == nil {
                    let limits = try await store.limits(of: known.user)
                    global = limits.global
                    userLimits[known.user] = limits.global.overridden(by: limits.own)
                }
                row["killed"] = known.state == .killed
                row["backplane"] = ["downloads": known.downloadEnabled, "killed": known.state == .killed,
                                    "lastSync": known.lastSync.map(Self.time) ?? "never",
                                    "limit": userLimits[known.user]?.maxDevices.map { "\($0)" } ?? "no limit"] as [String: Any]
            }
            rows.append(row)
        }
        let counts = try await registry.listings.estimatedCounts()
        var values: [String: Any] = ["devices": rows, "count": counts.devices, "empty": rows.isEmpty,
                                     "paging": Self.paging(base: "/admin/devices", next: page.next, atStart: request.after == nil, fields: [:])]
        if let store {
            if userLimits.isEmpty { global = try await store.limits(of: "").global }
            values["hasBackplane"] = true
            values["globalLimit"] = global.maxDevices.map { "at most \($0) download-enabled device(s) per user" } ?? "no limit on download-enabled devices per user"
        }
        return values
    }

    /// What happened, newest first: licenses issued (the audit), devices registered, device licenses renewed and released.
    func events() async throws -> [String: Any] {
        var events: [(at: Date, kind: String, what: String, who: String)] = []
        for license in try await console.service.store.licenses(limit: Self.auditLimit) {
            events.append((license.issuedAt, "license", "\(license.type) license for \(license.assetID)", license.subject))
        }
        if let registry = console.registry {
            for device in try await registry.listings.devices(limit: Self.auditLimit) {
                events.append((device.registeredAt, "device", "device \(device.name ?? String(device.deviceID.prefix(8))) registered", device.subject))
            }
            for license in try await registry.listings.licenses(limit: Self.auditLimit) {
                if let renewed = license.renewedAt { events.append((renewed, "renewal", "license of \(license.assetID) renewed", license.subject)) }
                if let released = license.releasedAt { events.append((released, "release", "license of \(license.assetID) released", license.subject)) }
            }
        }
        let rows = events.sorted { $0.at > $1.at }.prefix(Self.auditLimit).map {
            ["time": Self.time($0.at), "kind": $0.kind, "what": $0.what, "who": $0.who] as [String: Any]
        }
        return ["events": Array(rows), "empty": rows.isEmpty]
    }

    static func licenseRow(_ license: IssuedLicense) -> [String: Any] {
        ["time": time(license.issuedAt), "asset": license.assetID, "keyID": license.keyID, "subject": license.subject, "type": license.type]
    }

    /// A policy in a few words: window, lease, rental, offline and output rules.
    static func policyWords(_ policy: AssetPolicy) -> [String] {
        var words: [String] = []
        if let notBefore = policy.notBefore { words.append("from \(time(notBefore))") }
        if let notAfter = policy.notAfter { words.append("until \(time(notAfter))") }
        if let lease = policy.leaseSeconds { words.append("lease \(duration(lease))") }
        if let rental = policy.rentalSeconds { words.append("rental \(duration(rental))") }
        if let playback = policy.playbackSeconds { words.append("playback \(duration(playback))") }
        if let renewal = policy.renewalSeconds { words.append("renew every \(duration(renewal))") }
        words.append(policy.offline ? "offline allowed" : "online only")
        if let hdcp = policy.hdcp { words.append("HDCP \(hdcp)") }
        if !policy.allowAirPlay { words.append("no AirPlay") }
        return words
    }

    static func duration(_ seconds: UInt32) -> String {
        if seconds % 86400 == 0 { return "\(seconds / 86400) d" }
        if seconds % 3600 == 0 { return "\(seconds / 3600) h" }
        if seconds % 60 == 0 { return "\(seconds / 60) min" }
        return "\(seconds) s"
    }

    /// `2026-11-23 14:05:09 UTC`.
    static func time(_ date: Date) -> String {
        let text = date.ISO8601Format(.iso8601(timeZone: .gmt, dateSeparator: .dash, dateTimeSeparator: .space, timeSeparator: .colon))
        return String(text.prefix(19)) + " UTC"
    }
}
