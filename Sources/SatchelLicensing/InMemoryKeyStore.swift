import Foundation
import SatchelBytes
import SatchelProtection

/// A ``KeyStore`` in memory: the same rules as the database store (asset IDs of 1 to 200 bytes, lookups by
/// asset, FairPlay asset or key ID, deletion by asset or key), nothing kept after the process ends.
public actor InMemoryKeyStore: KeyStore {
    private struct Asset {
        var fairPlayAssetID: String
        var policy: AssetPolicy
        var keys: [ContentKey]
    }

    private var assets: [String: Asset] = [:]
    private var order: [String] = []
    private var signals: [KeyID: KeySignalling] = [:]
    private var issued: [IssuedLicense] = []
    private var syncs: [(contentID: String, durationToExpiry: Int64, subject: String)] = []

    /// An empty store.
    public init() {}

    public func importKeys(_ keys: [ContentKey], assetID: String, fairPlayAssetID: String?, policy: AssetPolicy, reassign: Bool,
                           signalling: [KeyID: KeySignalling]) throws(LicensingError) {
        guard !assetID.isEmpty, assetID.utf8.count <= 200 else { throw .badRequest("an asset ID is 1 to 200 bytes") }
        guard !keys.isEmpty else { throw .badRequest("no keys to import") }
        var checked: [KeyID: KeySignalling] = [:]
        for key in keys { checked[key.keyID] = try signalling[key.keyID]?.checked() }
        let moved = Set(keys.map(\.keyID))
        if !reassign, let (holder, key) = assets.lazy.compactMap({ id, asset in
            id == assetID ? nil : asset.keys.first { moved.contains($0.keyID) }.map { (id, $0) }
        }).first {
            throw .keyHeld(keyID: key.keyID.hex, asset: holder)
        }
        for (id, asset) in assets where id != assetID {
            assets[id]?.keys = asset.keys.filter { !moved.contains($0.keyID) }  // a key belongs to one asset
        }
        var kept = assets[assetID]?.keys.filter { !moved.contains($0.keyID) } ?? []
        kept.append(contentsOf: keys)
        if assets[assetID] == nil { order.append(assetID) }
        assets[assetID] = Asset(fairPlayAssetID: fairPlayAssetID ?? assetID, policy: policy, keys: kept)
        for key in keys { signals[key.keyID] = checked[key.keyID] }
    }

    public func signalling(asset: String) -> [KeyID: KeySignalling] {
        signals.filter { id, _ in assets[asset]?.keys.contains { $0.keyID == id } == true }
    }

    public func summaries(_ page: ListingRequest) -> ListingPage<KeySummary> {
        let rows = order.sorted().flatMap { id in
            (assets[id]?.keys ?? []).map { key in
                KeySummary(assetID: id, fairPlayAssetID: assets[id]?.fairPlayAssetID ?? id, keyID: key.keyID.hex,
                           policy: assets[id]?.policy ?? AssetPolicy())
            }
        }.sorted { $0.sortKey.lexicographicallyPrecedes($1.sortKey) }
        .filter { row in
            (page.afterKey.map { row.sortKey.lexicographicallyPrecedes($0) == false && row.sortKey != $0 } ?? true)
                && (page.prefix.map { row.assetID.hasPrefix($0) } ?? true)
        }
        return ListingPage(reading: Array(rows.prefix(page.limit + 1)), limit: page.limit, listing: KeySummary.listing, key: \.sortKey)
    }

    public func keys(asset: String) throws(LicensingError) -> [StoredKey] {
        let id = assets[asset] != nil ? asset : assets.first { $0.value.fairPlayAssetID == asset }?.key
        guard let id, let found = assets[id], !found.keys.isEmpty else { throw .unknownAsset(asset) }
        return found.keys.map { stored(id, found, $0) }
    }

    public func issuedPerHour(types: [String], hours: [Date]) -> [String: [Int]] {
        guard let first = hours.first else { return [:] }
        var counts = Dictionary(uniqueKeysWithValues: types.map { ($0, Array(repeating: 0, count: hours.count)) })
        for license in issued {
            let slot = Int((license.issuedAt.timeIntervalSince(first) / 3600).rounded(.down))
            if slot >= 0, slot < hours.count { counts[license.type]?[slot] += 1 }
        }
        return counts
    }

    public func estimatedCounts() -> (assets: Int, keys: Int) {
        (assets.count, assets.values.reduce(0) { $0 + $1.keys.count })
    }

    public func delete(_ id: String) -> Bool {
        if assets.removeValue(forKey: id) != nil {
            order.removeAll { $0 == id }
            return true
        }
        for (assetID, asset) in assets where asset.keys.contains(where: { $0.keyID.hex == id.lowercased() }) {
            assets[assetID]?.keys.removeAll { $0.keyID.hex == id.lowercased() }
            return true
        }
        return false
    }

    public func key(id keyID: KeyID) throws(LicensingError) -> StoredKey {
        for (assetID, asset) in assets {
            if let key = asset.keys.first(where: { $0.keyID == keyID }) { return stored(assetID, asset, key) }
        }
        throw .unknownAsset(keyID.hex)
    }

    public func key(asset: String) throws(LicensingError) -> StoredKey {
        let id = assets[asset] != nil ? asset : assets.first { $0.value.fairPlayAssetID == asset }?.key
        guard let id, let found = assets[id], let key = found.keys.first else { throw .unknownAsset(asset) }
        return stored(id, found, key)
    }

    public func recordLicense(assetID: String, keyID: String, subject: String, type: String, customData: String?, at date: Date) {
        issued.append(IssuedLicense(assetID: assetID, keyID: keyID, subject: subject, type: type, issuedAt: date, customData: customData))
    }

    public func recordSync(contentID: String, durationToExpiry: UInt32, subject: String, at date: Date) {
        syncs.append((contentID, Int64(durationToExpiry), subject))
    }

    public func licenses(matching filter: AuditFilter, limit: Int) -> [IssuedLicense] {
        Array(issued.reversed().lazy.filter(filter.matches).prefix(max(limit, 0)))
    }

    public func licenses(matching filter: AuditFilter, page: ListingRequest) throws(LicensingError) -> ListingPage<IssuedLicense> {
        // The cursor is a record's place in the log (its time, its number): records only ever join at the end.
        var end = issued.count
        if let key = page.afterKey {
            guard key.count == 2, let place = Int(key[1]), (0...issued.count).contains(place) else { throw .badRequest("not a cursor of the audit") }
            end = place
        }
        let rows = issued[..<end].indices.reversed().lazy.filter { filter.matches(self.issued[$0]) }.prefix(page.limit + 1)
        return ListingPage(reading: Array(rows), limit: page.limit, listing: IssuedLicense.listing) {
            ["\(self.issued[$0].issuedAt.timeIntervalSinceReferenceDate)", String($0)]
        }.map { issued[$0] }
    }

    public func syncReports() -> [(contentID: String, durationToExpiry: Int64, subject: String)] {
        Array(syncs.reversed().prefix(1000))
    }

    private func stored(_ assetID: String, _ asset: Asset, _ key: ContentKey) -> StoredKey {
        StoredKey(assetID: assetID, fairPlayAssetID: asset.fairPlayAssetID, key: key, policy: asset.policy)
    }
}
