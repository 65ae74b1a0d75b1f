import Foundation
import SatchelBytes
import SatchelProtection
@testable import SatchelLicensing
import Testing

/// Issue 47, point 2, for the key store: its keys listed a page at a time by asset ID then key ID, while assets are
/// imported and deleted during the walk; keys of one asset read through the index by asset.
@Suite("Key listing")
struct KeyListingTests {
    static let postgres = ProcessInfo.processInfo.environment["SATCHEL_TEST_DATABASE_URL"]
    static let kinds: [String?] = [nil] + (postgres.map { [$0] } ?? [])

    static func key(_ number: Int) throws -> ContentKey {
        try ContentKey(keyID: KeyID(hex: String(format: "%032x", number)), key: SecretBytes(SecureRandom.bytes(16)), iv: SecureRandom.bytes(16))
    }

    @Test("walked 5 at a time with a prefix while assets come and go: each key there throughout once, in order; an asset's keys in the order imported", arguments: kinds)
    func walk(url: String?) async throws {
        let directory = NSTemporaryDirectory() + "satchel-keys-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = try await LicensingDatabase(dataDirectory: directory, url: url)
        do {
            let store = FluentKeyStore(database: database, kek: try KeyEncryptionKey(SecretBytes(SecureRandom.bytes(32))))
            let run = "walk-\(UUID().uuidString.prefix(8))-"
            let base = Int.random(in: 1..<1_000_000) * 1000
            let entries = try (0..<12).map { index in
                try CatalogEntry(assetID: run + String(format: "%02d", index * 2), keys: [try Self.key(base + index * 2), try Self.key(base + index * 2 + 1)], policy: AssetPolicy())
            }
            #expect(try await store.importCatalog(entries) == 24)
            #expect(try await store.importCatalog(entries) == 24, "imported again: replaced")
            var request = ListingRequest(limit: 5, prefix: run), walked: [KeySummary] = [], pages = 0
            while true {
                let page = try await store.summaries(request)
                walked += page.items
                pages += 1
                if pages == 2 {
                    _ = try await store.delete(run + "20")  // ahead
                    _ = try await store.delete(run + "00")  // behind
                    _ = try await store.importCatalog([try CatalogEntry(assetID: run + "21", keys: [try Self.key(base + 900)], policy: AssetPolicy())])
                }
                guard let next = page.next else { break }
                request.after = try ListingCursor(decoding: next, listing: KeySummary.listing, columns: 2)
            }
            let assets = walked.map(\.assetID)
            #expect(walked.map(\.sortKey) == walked.map(\.sortKey).sorted { $0.lexicographicallyPrecedes($1) }, "in order")
            #expect(Set(walked.map(\.keyID)).count == walked.count, "each once")
            #expect(assets.contains(run + "00") && !assets.contains(run + "20") && assets.contains(run + "21"), "\(assets)")
            #expect(assets.filter { $0 == run + "10" }.count == 2, "an asset's two keys")
            let keys = try await store.keys(asset: run + "04")
            #expect(keys.map(\.key.keyID.hex) == [String(format: "%032x", base + 4), String(format: "%032x", base + 5)])
            await #expect(throws: LicensingError.keyHeld(keyID: String(format: "%032x", base + 4), asset: run + "04")) {
                _ = try await store.importCatalog([try CatalogEntry(assetID: run + "99", keys: [try Self.key(base + 4)], policy: AssetPolicy())])
            }
            await #expect(throws: LicensingError.unknownAsset(run + "99"), "nothing of a refused batch kept") { _ = try await store.keys(asset: run + "99") }
            let counts = try await store.estimatedCounts()
            #expect(counts.keys >= 21 && counts.assets >= 11, "\(counts)")
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }
}
