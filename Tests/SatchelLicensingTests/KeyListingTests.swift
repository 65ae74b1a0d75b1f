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

    /// A key store on SQLite in a folder of its own (`url` nil) or on the PostgreSQL database `url`, shut down after `body`.
    static func withStore(_ url: String?, _ body: (FluentKeyStore) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "satchel-keys-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let database = try await LicensingDatabase(dataDirectory: directory, url: url)
        do {
            try await body(FluentKeyStore(database: database, kek: try KeyEncryptionKey(SecretBytes(SecureRandom.bytes(32)))))
        } catch {
            await database.shutdown()
            throw error
        }
        await database.shutdown()
    }

    @Test("walked 5 at a time with a prefix while assets come and go: each key there throughout once, in order; an asset's keys in the order imported", arguments: kinds)
    func walk(url: String?) async throws {
        try await Self.withStore(url) { store in
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
        }
    }

    @Test("the audit walked 4 at a time, newest first, filtered by asset, while licenses keep being issued: each record of the filter once (several of one instant too), the new ones not (they are ahead of the walk); a forged cursor is refused; the in-memory store pages the same", arguments: kinds)
    func auditWalk(url: String?) async throws {
        try await Self.withStore(url) { store in
            let asset = "audit-\(UUID().uuidString.prefix(8))"
            // Times that do not make an exact round trip through Date and the database's column (a whole second would).
            let start = Date(timeIntervalSince1970: 1_795_919_198.3684688)
            // 15 of the asset (five at one instant), and others between them.
            for index in 0..<15 {
                let time = index < 5 ? start : start.addingTimeInterval(Double(index) * 0.0371)
                try await store.recordLicense(assetID: asset, keyID: "k", subject: "user-\(index)", type: "clearkey-temporary", customData: nil, at: time)
                try await store.recordLicense(assetID: asset + "-other", keyID: "k", subject: "other", type: "aes-128", customData: nil, at: time)
            }
            var request = ListingRequest(limit: 4), walked: [IssuedLicense] = [], pages = 0
            while true {
                let page = try await store.licenses(matching: AuditFilter(assetID: asset), page: request)
                walked += page.items
                pages += 1
                if pages == 2 {
                    try await store.recordLicense(assetID: asset, keyID: "k", subject: "late", type: "clearkey-temporary", customData: nil, at: start.addingTimeInterval(1))
                }
                guard let next = page.next, pages < 20 else { break }  // a cursor that does not move on ends the walk
                request.after = try ListingCursor(decoding: next, listing: IssuedLicense.listing, columns: 2)
            }
            let subjects = walked.map(\.subject)
            #expect(walked.count == 15 && Set(subjects).count == 15 && !subjects.contains("late"), "each once: \(subjects)")
            #expect(walked.map(\.issuedAt) == walked.map(\.issuedAt).sorted(by: >) && walked.allSatisfy { $0.assetID == asset }, "newest first, the filter's")
            #expect(pages == 4)
            let forged = ListingCursor(listing: IssuedLicense.listing, key: ["1800000000", "not a record"])
            await #expect(throws: LicensingError.self) { _ = try await store.licenses(matching: AuditFilter(), page: ListingRequest(limit: 4, after: forged)) }
        }

        let memory = InMemoryKeyStore()
        for index in 0..<7 { await memory.recordLicense(assetID: "a", keyID: "k", subject: "s\(index)", type: "aes-128", customData: nil, at: Date()) }
        let first = try await memory.licenses(matching: AuditFilter(), page: ListingRequest(limit: 4))
        let cursor = try ListingCursor(decoding: try #require(first.next), listing: IssuedLicense.listing, columns: 2)
        let second = try await memory.licenses(matching: AuditFilter(), page: ListingRequest(limit: 4, after: cursor))
        #expect((first.items + second.items).map(\.subject) == ["s6", "s5", "s4", "s3", "s2", "s1", "s0"] && second.next == nil)
    }
}

