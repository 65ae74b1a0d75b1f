import FluentKit
import Foundation
import SQLKit
import SatchelStorage

/// The statements the license service runs for a device or a player, in one place: each reads a bounded number of
/// rows through an index (``hot`` lists them with example binds; a test asks SQLite and PostgreSQL for their plans).
package enum LicensingQueries {
    /// The columns a key is opened from: the key's row and its asset's.
    private static let keyColumns: SQLQueryString = """
        satchel_keys.key_id, satchel_keys.asset_id, satchel_keys.sealed_key, satchel_keys.iv, satchel_assets.fairplay_asset_id, satchel_assets.policy
        """

    /// The key with this key ID, with its asset (the primary key of each).
    static func key(id keyID: String) -> SQLQueryString {
        """
        SELECT \(keyColumns) FROM satchel_keys JOIN satchel_assets ON satchel_assets.asset_id = satchel_keys.asset_id
        WHERE satchel_keys.key_id = \(bind: keyID)
        """
    }

    /// Every key of an asset named by its asset ID, first imported first (`satchel_keys_asset`).
    static func keys(assetID: String) -> SQLQueryString {
        """
        SELECT \(keyColumns) FROM satchel_assets JOIN satchel_keys ON satchel_keys.asset_id = satchel_assets.asset_id
        WHERE satchel_assets.asset_id = \(bind: assetID) ORDER BY satchel_keys.created_at, satchel_keys.key_id LIMIT \(literal: maxKeysPerAsset)
        """
    }

    /// Each key's scheme and exchanged signalling of an asset (`satchel_keys_asset`): what an export reads.
    static func signalling(assetID: String) -> SQLQueryString {
        """
        SELECT key_id, scheme, signalling FROM satchel_keys WHERE asset_id = \(bind: assetID) ORDER BY created_at, key_id LIMIT \(literal: maxKeysPerAsset)
        """
    }

    /// Every key of an asset named by its FairPlay asset ID (the `skd://` host; its own unique index).
    static func keys(fairPlayAssetID: String) -> SQLQueryString {
        """
        SELECT \(keyColumns) FROM satchel_assets JOIN satchel_keys ON satchel_keys.asset_id = satchel_assets.asset_id
        WHERE satchel_assets.fairplay_asset_id = \(bind: fairPlayAssetID) ORDER BY satchel_keys.created_at, satchel_keys.key_id
        LIMIT \(literal: maxKeysPerAsset)
        """
    }

    /// The most keys one asset holds (a title: a key per track, resolution or rotation period, bounded so a license stays bounded).
    static let maxKeysPerAsset = 1000

    /// A device by its ID (every signed device request).
    static func device(id: String) -> SQLQueryString {
        "SELECT subject, public_key, name, external_id, registered_at, disabled FROM satchel_devices WHERE device_id = \(bind: id)"
    }

    /// A device by its user and key (registration: the same key registered again keeps its device ID).
    static func device(subject: String, fingerprint: String) -> SQLQueryString {
        "SELECT device_id FROM satchel_devices WHERE subject = \(bind: subject) AND fingerprint = \(bind: fingerprint)"
    }

    /// A device request's nonce, kept (its unique index refuses a replay).
    static func insertNonce(id: UUID, device: String, nonce: String, at now: Date) -> SQLQueryString {
        "INSERT INTO satchel_device_nonces (id, device_id, nonce, seen_at) VALUES (\(bind: id), \(bind: device), \(bind: nonce), \(bind: now))"
    }

    /// Whether the device used this nonce.
    static func nonce(device: String, nonce: String) -> SQLQueryString {
        "SELECT id FROM satchel_device_nonces WHERE device_id = \(bind: device) AND nonce = \(bind: nonce)"
    }

    /// Forgets the nonces seen before `before` (`satchel_device_nonces_seen_at`).
    static func forgetNonces(before: Date) -> SQLQueryString {
        "DELETE FROM satchel_device_nonces WHERE seen_at < \(bind: before)"
    }

    /// A device license by its ID.
    static func license(id: String) -> SQLQueryString {
        "SELECT \(licenseColumns) FROM satchel_device_licenses WHERE license_id = \(bind: id)"
    }

    /// A device's licenses, newest first (`satchel_device_licenses_device`).
    static func licenses(device: String, limit: Int) -> SQLQueryString {
        """
        SELECT \(licenseColumns) FROM satchel_device_licenses WHERE device_id = \(bind: device)
        ORDER BY issued_at DESC, license_id DESC LIMIT \(literal: max(0, limit))
        """
    }

    /// The columns of a device license.
    static let licenseColumns: SQLQueryString = """
        license_id, device_id, subject, asset_id, persistent, state, rights, issued_at, renewed_at, released_at, custom_data
        """

    /// A page of key summaries after `after` (asset ID, key ID): the keys' index walked from there for `limit` rows,
    /// then their assets joined (the join after the limit: a planner joining first would read the catalogue).
    static func keyPage(after: [String]?, prefix: String?, limit: Int) -> SQLQueryString {
        var conditions: [SQLQueryString] = []
        if let after { conditions.append("(asset_id, key_id) > (\(bind: after[0]), \(bind: after[1]))") }
        if let prefix { conditions.append("asset_id >= \(bind: prefix)") }
        let condition: SQLQueryString = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return """
            SELECT page.asset_id, page.key_id, satchel_assets.fairplay_asset_id, satchel_assets.policy
            FROM (SELECT asset_id, key_id FROM satchel_keys \(condition) ORDER BY asset_id, key_id LIMIT \(literal: limit)) AS page
            JOIN satchel_assets ON satchel_assets.asset_id = page.asset_id ORDER BY page.asset_id, page.key_id
            """
    }

    /// The operator's listings, first and later pages, with example cursors: each walks an index from the cursor.
    package static var listings: [HotQuery] {
        [
            HotQuery("keys, first page", keyPage(after: nil, prefix: nil, limit: 101)),
            HotQuery("keys, a later page", keyPage(after: ["asset-5000", "k1"], prefix: nil, limit: 101)),
            HotQuery("keys by asset ID prefix", keyPage(after: nil, prefix: "asset-5", limit: 101)),
        ]
    }

    /// The hot statements with example binds.
    package static var hot: [HotQuery] {
        let now = Date()
        return [
            HotQuery("a key by its ID", key(id: "00112233445566778899aabbccddeeff")),
            HotQuery("keys of an asset", keys(assetID: "asset-1")),
            HotQuery("keys of a FairPlay asset", keys(fairPlayAssetID: "asset-1")),
            HotQuery("an asset's key signalling", signalling(assetID: "asset-1")),
            HotQuery("a device", device(id: "device-1")),
            HotQuery("a device by its user and key", device(subject: "user-1", fingerprint: "f")),
            HotQuery("a request's nonce kept", insertNonce(id: UUID(), device: "device-1", nonce: "n", at: now)),
            HotQuery("a request's nonce looked up", nonce(device: "device-1", nonce: "n")),
            HotQuery("old nonces forgotten", forgetNonces(before: now.addingTimeInterval(-660))),
            HotQuery("a device license", license(id: "license-1")),
            HotQuery("a device's licenses", licenses(device: "device-1", limit: 100)),
        ]
    }

    /// The audit of licenses issued, partitioned by month of issue on PostgreSQL.
    public static let licenseHistory = MonthlyPartitions.Table(name: "satchel_licenses", key: "id", time: "issued_at")
    /// The FairPlay sync reports, partitioned by month of receipt on PostgreSQL.
    public static let syncHistory = MonthlyPartitions.Table(name: "satchel_syncs", key: "id", time: "received_at")

    /// The license service's tables that grow with the catalogue, the audience or the history.
    package static let growingTables: Set<String> = [
        "satchel_assets", "satchel_keys", "satchel_licenses", "satchel_syncs", "satchel_devices", "satchel_device_licenses",
        "satchel_device_nonces", "satchel_fairplay_rentals", "satchel_fairplay_offline_keys",
    ]
}

/// The indexes a request's reads go through (migration 8): keys by asset, devices by user, licenses by device,
/// the audit by time and by asset or user.
struct IndexForScale: AsyncMigration {
    static let indexes: [(name: String, table: String, columns: [String])] = [
        ("satchel_keys_asset", "satchel_keys", ["asset_id", "key_id"]),
        ("satchel_devices_subject", "satchel_devices", ["subject", "registered_at"]),
        ("satchel_devices_registered", "satchel_devices", ["registered_at", "device_id"]),
        ("satchel_devices_disabled", "satchel_devices", ["disabled"]),
        ("satchel_device_licenses_device", "satchel_device_licenses", ["device_id", "issued_at"]),
        ("satchel_device_licenses_issued", "satchel_device_licenses", ["issued_at", "license_id"]),
        ("satchel_licenses_issued", "satchel_licenses", ["issued_at"]),
        ("satchel_licenses_asset", "satchel_licenses", ["asset_id", "issued_at"]),
        ("satchel_licenses_subject", "satchel_licenses", ["subject", "issued_at"]),
        ("satchel_syncs_received", "satchel_syncs", ["received_at"]),
        ("satchel_fairplay_offline_keys_issued", "satchel_fairplay_offline_keys", ["issued_at"]),
        ("satchel_fairplay_offline_keys_subject", "satchel_fairplay_offline_keys", ["subject", "issued_at"]),
    ]

    func prepare(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        try await Self.create(Self.indexes, on: sql)
    }

    /// Creates `indexes` on `sql`.
    static func create(_ indexes: [(name: String, table: String, columns: [String])], on sql: any SQLDatabase) async throws {
        for index in indexes {
            var create = sql.create(index: index.name).on(index.table)
            for column in index.columns { create = create.column(column) }
            try await create.run()
        }
    }

    func revert(on database: any Database) async throws {
        guard let sql = database as? any SQLDatabase else { return }
        for index in Self.indexes { try await sql.drop(index: index.name).run() }
    }
}
