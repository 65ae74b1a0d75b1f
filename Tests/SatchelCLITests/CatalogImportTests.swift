import Foundation
import SQLKit
import SatchelBytes
import SatchelLicensing
import SatchelSystem
import SatchelTestSupport
import Testing

/// Issue 47, point 3: a catalogue (JSON Lines, one asset with its keys, IVs and policy a line) imported in batches, each
/// in one transaction, resumable after a failure without duplicates.
@Suite("satchel keys import --catalog")
struct CatalogImportTests {
    /// Asset `asset`'s key `index` (two keys an asset): its ID and value are made from its number, so every stored key can be checked.
    static func keyID(_ number: Int) -> String { String(format: "%032x", number) }
    static func keyValue(_ number: Int) -> String { "ab" + String(format: "%030x", number * 7 + 3) }


    /// A catalogue of `assets` assets of two keys each; `broken`, when given, is a line that is not an entry.
    static func write(assets: Int, broken: Int? = nil, to url: URL) async throws {
        try await OwnThread.run { try writeNow(assets: assets, broken: broken, to: url) }
    }

    static func writeNow(assets: Int, broken: Int?, to url: URL) throws {
        var text = ""
        text.reserveCapacity(assets * 260)
        for asset in 0..<assets {
            if asset == broken {
                text += "{\"assetID\": \"movie-\(asset)\", \"keys\": [{\"keyID\": \"not-hex\"}]}\n"
                continue
            }
            let keys = (0..<2).map { "{\"keyID\":\"\(keyID(asset * 2 + $0))\",\"key\":\"\(keyValue(asset * 2 + $0))\",\"iv\":\"000102030405060708090a0b0c0d0e0f\"}" }
            text += "{\"assetID\":\"movie-\(asset)\",\"keys\":[\(keys.joined(separator: ","))],\"policy\":{\"rentalSeconds\":172800,\"offline\":true}}\n"
        }
        try Data(text.utf8).write(to: url)
    }

    /// Every key in the store, opened with the data directory's KEK: each must be the value the catalogue gave, each once.
    /// Read a page of 5,000 rows at a time, in key order: SQLite's driver hands the event loop one task per row, so the
    /// whole table at once held a loop for a third of a second, and decoding it the task pool for two.
    static func checkStore(_ data: String, keys expected: Int) async throws {
        let kek = try KeyEncryptionKey.load(file: nil, dataDirectory: data).kek
        try await LicensingDatabase(dataDirectory: data, url: nil).using { database in
            var after = "", count = 0, wrong = 0, seen = Set<String>()
            while true {
                let rows = try await database.sql().raw("""
                    SELECT key_id, asset_id, sealed_key FROM satchel_keys WHERE key_id > \(bind: after) ORDER BY key_id LIMIT 5000
                    """).all()
                guard !rows.isEmpty else { break }
                let (ids, wrongHere) = try await OwnThread.run { () throws -> ([String], Int) in
                    var ids: [String] = [], wrong = 0
                    for row in rows {
                        let id = try row.decode(column: "key_id", as: String.self), asset = try row.decode(column: "asset_id", as: String.self)
                        let opened = try kek.open(Array(try row.decode(column: "sealed_key", as: Data.self)), keyID: id)
                        if Hex.encode(opened.bytes) != keyValue(Int(id, radix: 16) ?? -1) || asset != "movie-\((Int(id, radix: 16) ?? -2) / 2)" { wrong += 1 }
                        ids.append(id)
                    }
                    return (ids, wrong)
                }
                count += ids.count
                wrong += wrongHere
                seen.formUnion(ids)
                after = ids.last ?? after
            }
            #expect(count == expected, "\(count) keys stored of \(expected)")
            #expect(wrong == 0 && seen.count == count, "\(wrong) keys open to another value or asset")
            let store = FluentKeyStore(database: database, kek: kek)
            let last = expected / 2 - 1
            let keys = try await store.keys(asset: "movie-\(last)")
            #expect(keys.map(\.key.keyID.hex) == [keyID(last * 2), keyID(last * 2 + 1)] && keys.first?.policy.rentalSeconds == 172_800,
                    "an asset's keys in the catalogue's order, with its policy")
        }
    }

    @Test("100,000 keys import and each opens to the value given; a broken line stops the import naming its line, and the same command run again after the fix ends with every key once")
    func hundredThousandKeys() async throws {
        let directory = try CLIRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let catalogue = directory.appendingPathComponent("catalogue.jsonl"), data = directory.appendingPathComponent("data").path
        try await Self.write(assets: 50_000, broken: 30_000, to: catalogue)
        let stopped = try await OwnThread.run { try CLIRunner.run(["keys", "import", "--catalog", catalogue.path, "--data-dir", data]) }
        #expect(stopped.status != 0 && stopped.stderr.contains("line 30001") && stopped.stderr.contains("run the same command again"), "\(stopped.stderr)")
        #expect(!stopped.stderr.contains(Self.keyValue(60_000)), "no key's value in an error")
        try await Self.write(assets: 50_000, to: catalogue)
        let imported = try await OwnThread.run { try CLIRunner.run(["keys", "import", "--catalog", catalogue.path, "--data-dir", data]) }
        #expect(imported.status == 0 && imported.stdout.contains("imported 100000 keys of 50000 assets"), "\(imported.stdout) \(imported.stderr)")
        try await Self.checkStore(data, keys: 100_000)
    }

    @Test("an import killed midway and run again ends with each key once")
    func killedMidway() async throws {
        let directory = try CLIRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let catalogue = directory.appendingPathComponent("catalogue.jsonl"), data = directory.appendingPathComponent("data").path
        try await Self.write(assets: 20_000, to: catalogue)
        let binary = try #require(CLIRunner.binary)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["keys", "import", "--catalog", catalogue.path, "--data-dir", data]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        // Killed once its first batches are in the database, the file and its log (or at the latest after 20 s): past the
        // 1.4 MB a new store's migrations leave in them.
        let files = ["satchel.sqlite", "satchel.sqlite-wal"].map { URL(fileURLWithPath: data).appendingPathComponent($0).path }
        for _ in 0..<400 where process.isRunning {
            if files.map({ (try? FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int) ?? 0 }).reduce(0, +) > 3_000_000 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let wasRunning = process.isRunning
        kill(process.processIdentifier, SIGKILL)
        await OwnThread.run { process.waitUntilExit() }  // blocking-ok: a thread of its own
        let again = try await OwnThread.run { try CLIRunner.run(["keys", "import", "--catalog", catalogue.path, "--data-dir", data]) }
        #expect(again.status == 0 && again.stdout.contains("imported 40000 keys"), "\(again.stdout) \(again.stderr)")
        try await Self.checkStore(data, keys: 40_000)
        #expect(wasRunning, "the first import was still running when it was killed (it ended too soon to test a kill)")
    }
}
