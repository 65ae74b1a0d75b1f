import Foundation
import SQLKit
import SatchelBytes
@testable import SatchelLicensing
import Testing

/// The audit journal beside a SQLite store: a license's record is durable once appended, the database takes the
/// records soon after, and what a killed process left is folded by the next one — once, whatever was cut short.
@Suite("Audit journal")
struct AuditJournalTests {
    static let start = Date(timeIntervalSince1970: 1_900_000_000)

    /// A license record; its row ID is derived from `index`, so that a record made twice is the same record.
    static func license(_ index: Int, customData: String? = nil) -> AuditRecord {
        .license(AuditLog.LicenseEntry(id: id(index), assetID: "film-\(index)", keyID: String(repeating: "ab", count: 16), subject: "user-\(index % 3)",
                                       type: "clearkey-temporary", customData: customData, issuedAt: start.addingTimeInterval(Double(index))))
    }

    static func sync(_ index: Int) -> AuditRecord {
        .sync(AuditLog.SyncEntry(id: id(index), contentID: String(repeating: "cd", count: 16), durationToExpiry: -Int64(index), subject: "user-\(index)",
                                 receivedAt: start.addingTimeInterval(0.25)))
    }

    static func id(_ index: Int) -> UUID {
        UUID(uuidString: String(format: "00000000-0000-4000-8000-%012d", index)) ?? UUID()
    }

    static func directory(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "satchel-journal-\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func store(_ directory: String) async throws -> (FluentKeyStore, LicensingDatabase) {
        let database = try await LicensingDatabase(dataDirectory: directory, url: nil)
        return (FluentKeyStore(database: database, kek: try KeyEncryptionKey(SecretBytes.random(32))), database)
    }

    static func journalBytes(_ directory: String) -> [Int] {
        (0..<2).map { (try? FileManager.default.attributesOfItem(atPath: directory + "/audit-\($0).journal")[.size] as? Int) ?? -1 }
    }

    @Test("a record reads back as written: licenses with and without custom data, sync reports (negative durations, fractional times)")
    func roundTrip() {
        let records = [Self.license(1), Self.license(2, customData: "<plan>full</plan> ünïcödé"), Self.sync(3)]
        let bytes = records.flatMap(\.encoded)
        let (read, intact) = AuditRecord.decodeAll(bytes)
        #expect(read == records)
        #expect(intact == bytes.count)
    }

    @Test("a journal cut at every length reads to its last whole record; a changed byte ends the reading before its record")
    func damage() {
        let records = (0..<4).map { Self.license($0) }
        let encoded = records.map(\.encoded)
        let bytes = encoded.flatMap { $0 }
        let ends = encoded.reduce(into: [0]) { $0.append($0.last! + $1.count) }
        for cut in 0...bytes.count {
            let (read, intact) = AuditRecord.decodeAll(Array(bytes[..<cut]))
            let whole = ends.lastIndex { $0 <= cut } ?? 0
            #expect(read == Array(records[..<whole]) && intact == ends[whole], "cut at \(cut)")
        }
        for offset in ends[2]..<ends[3] {
            var changed = bytes
            changed[offset] ^= 0x20
            let (read, intact) = AuditRecord.decodeAll(changed)
            #expect(read == Array(records[..<2]) && intact == ends[2], "byte \(offset) changed")
        }
    }

    @Test("2,000 seeded mutations of a journal: no trap, and what is read is always a prefix of what was written")
    func seededMutations() {
        let records = (0..<6).map { $0 % 2 == 0 ? Self.license($0, customData: $0 == 2 ? "x" : nil) : Self.sync($0) }
        let bytes = records.flatMap(\.encoded)
        var state: UInt64 = 0x00A0_D175
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % max(bound, 1)
        }
        for _ in 0..<2_000 {
            var mutated = bytes
            for _ in 0...next(4) {
                switch next(4) {
                case 0: mutated[next(mutated.count)] = UInt8(truncatingIfNeeded: next(256))
                case 1: mutated.insert(UInt8(truncatingIfNeeded: next(256)), at: next(mutated.count))
                case 2: if mutated.count > 1 { mutated.remove(at: next(mutated.count)) }
                default: mutated.replaceSubrange(next(mutated.count)..<mutated.count, with: [0xFF, 0xFF, 0xFF, 0x7F])
                }
            }
            let (read, intact) = AuditRecord.decodeAll(mutated)
            #expect(read == Array(records.prefix(read.count)))
            #expect(intact <= mutated.count)
        }
    }

    @Test("licenses recorded at once are answered from the journal and reach the database; closing the store empties the journal")
    func folds() async throws {
        let directory = try Self.directory("folds")
        let (store, database) = try await Self.store(directory)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<60 {
                group.addTask {
                    try await store.recordLicense(assetID: "film", keyID: "k\(index)", subject: "user", type: "clearkey-temporary",
                                                  customData: index == 7 ? "seven" : nil, at: Self.start)
                }
            }
            try await group.waitForAll()
        }
        try await store.recordSync(contentID: "content", durationToExpiry: 30, subject: "user", at: Self.start)
        let licenses = try await store.licenses(limit: 100)
        #expect(licenses.count == 60 && Set(licenses.map(\.keyID)).count == 60)
        #expect(licenses.first { $0.keyID == "k7" }?.customData == "seven" && licenses.allSatisfy { $0.issuedAt == Self.start })
        let reports = try await store.syncReports()
        #expect(reports.count == 1 && reports.first?.contentID == "content" && reports.first?.durationToExpiry == 30 && reports.first?.subject == "user")
        await database.shutdown()
        #expect(Self.journalBytes(directory) == [0, 0])
        let mode = try FileManager.default.attributesOfItem(atPath: directory + "/audit-0.journal")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test("records keep reaching the database while readers fold at the same time: none is left waiting for the next reader")
    func readersBeside() async throws {
        let directory = try Self.directory("readers")
        let (store, database) = try await Self.store(directory)
        let journal = try #require(await database.audit.journalForTests)
        func write(_ range: Range<Int>, readers: Int) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<4 {
                    group.addTask {
                        for index in range {
                            try await store.recordLicense(assetID: "film", keyID: "k\(writer)-\(index)", subject: "user", type: "aes-128",
                                                          customData: nil, at: Self.start)
                        }
                    }
                }
                group.addTask { for _ in 0..<readers { _ = try await store.licenses(limit: 1) } }
                try await group.waitForAll()
            }
        }
        // Readers fold beside the writers (a writer's append then finds a fold asked for: the reader's), then writers alone.
        try await write(0..<150, readers: 60)
        try await write(150..<300, readers: 0)
        // No reader comes now: the folds the writers asked for must take every record by themselves.
        let deadline = ContinuousClock.now + .seconds(10)
        while journal.counts.folded < 1_200, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(journal.counts == (appended: 1_200, folded: 1_200))
        await database.shutdown()
    }

    @Test("records arriving one by one reach the database in folds at least the fold interval apart (each commit empties the readers' caches), and a reader still folds at once")
    func foldInterval() async throws {
        let directory = try Self.directory("interval")
        let (store, database) = try await Self.store(directory)
        let journal = try #require(await database.audit.journalForTests)
        let started = ContinuousClock.now
        for index in 0..<80 {
            try await store.recordLicense(assetID: "film", keyID: "k\(index)", subject: "user", type: "aes-128", customData: nil, at: Self.start)
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = ContinuousClock.now - started
        // Each record's fold would otherwise have ended before the next record came: 80 transactions.
        let bound = Int(elapsed / AuditLog.foldInterval) + 2
        let transactions = await database.audit.transactions
        #expect(transactions <= bound, "\(transactions) folds in \(elapsed)")
        #expect(journal.counts.appended == 80)
        // A reader does not wait for the interval: what waits is folded for it, and it reads every record.
        #expect(try await store.licenses(limit: 100).count == 80)
        #expect(journal.counts == (appended: 80, folded: 80))
        await database.shutdown()
    }

    @Test("what a killed process left is folded by the next one, once: a record already in the database is not doubled, a torn one is cut off and kept aside")
    func replay() async throws {
        let directory = try Self.directory("replay")
        let (first, firstDatabase) = try await Self.store(directory)
        try await first.recordLicense(assetID: "before", keyID: "k0", subject: "user", type: "fairplay", customData: nil, at: Self.start)
        _ = try await first.licenses(limit: 10)  // folded: the row is in the database
        await firstDatabase.shutdown()
        // A process that died after appending and before folding: its journal, written by hand.
        let records = [Self.license(1), Self.license(2, customData: "c"), Self.sync(3)]
        var bytes = records.flatMap(\.encoded)
        bytes += Array(Self.license(4).encoded.prefix(20))  // cut short by the crash
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/audit-0.journal"))
        // The first record once more, in the other file: folded before the crash but not yet cut from the journal.
        try Data(records[0].encoded).write(to: URL(fileURLWithPath: directory + "/audit-1.journal"))

        let (second, secondDatabase) = try await Self.store(directory)
        let licenses = try await second.licenses(limit: 10)
        #expect(licenses.map(\.assetID).sorted() == ["before", "film-1", "film-2"])
        #expect(licenses.first { $0.assetID == "film-2" }?.customData == "c")
        #expect(try await second.syncReports().count == 1)
        let aside = try Data(contentsOf: URL(fileURLWithPath: directory + "/audit-0.journal.damaged"))  // blocking-ok: a 20-byte file
        #expect(Array(aside) == Array(Self.license(4).encoded.prefix(20)))
        await secondDatabase.shutdown()
        #expect(Self.journalBytes(directory) == [0, 0])
        // Opening once more finds nothing to add.
        let (third, thirdDatabase) = try await Self.store(directory)
        #expect(try await third.licenses(limit: 10).count == 3)
        await thirdDatabase.shutdown()
    }

    @Test("one owner at a time: a second store on the directory commits to the database itself; the journal passes on when the first closes")
    func oneOwner() async throws {
        let directory = try Self.directory("owner")
        let (first, firstDatabase) = try await Self.store(directory)
        #expect(try AuditJournal.claim(directory: directory) == nil)
        let (second, secondDatabase) = try await Self.store(directory)
        try await first.recordLicense(assetID: "a", keyID: "k1", subject: "user", type: "aes-128", customData: nil, at: Self.start)
        try await second.recordLicense(assetID: "b", keyID: "k2", subject: "user", type: "aes-128", customData: nil, at: Self.start)
        #expect(try await first.licenses(limit: 10).count == 2)
        await secondDatabase.shutdown()
        await firstDatabase.shutdown()
        #expect(try AuditJournal.claim(directory: directory) != nil)
    }

    @Test("while the database refuses the records, licenses are still answered (durable in the journal) and the records wait; they land when it takes them again")
    func databaseRefuses() async throws {
        let directory = try Self.directory("refuses")
        let (store, database) = try await Self.store(directory)
        let sql = try database.auditSQL()
        try await sql.raw("ALTER TABLE satchel_licenses RENAME TO satchel_licenses_away").run()
        try await store.recordLicense(assetID: "film", keyID: "k1", subject: "user", type: "clearkey-temporary", customData: nil, at: Self.start)
        await #expect(throws: LicensingError.self) { try await store.licenses(limit: 10) }
        #expect(Self.journalBytes(directory).reduce(0, +) > 0)
        try await sql.raw("ALTER TABLE satchel_licenses_away RENAME TO satchel_licenses").run()
        try await store.recordLicense(assetID: "film", keyID: "k2", subject: "user", type: "clearkey-temporary", customData: nil, at: Self.start)
        #expect(try await store.licenses(limit: 10).map(\.keyID).sorted() == ["k1", "k2"])
        await database.shutdown()
        #expect(Self.journalBytes(directory) == [0, 0])
    }

    @Test("a journal the database has not emptied takes no record beyond its limit (the audit log waits for room), and takes them again once folded")
    func limit() throws {
        let directory = try Self.directory("limit")
        let journal = try #require(try AuditJournal.claim(directory: directory, limit: 2))
        #expect(try journal.append(Self.license(1)) == .kept(foldWanted: true))  // the first asks for a fold
        #expect(try journal.append(Self.license(2)) == .kept(foldWanted: false))  // one is asked for already
        #expect(try journal.append(Self.license(3)) == .full)
        let taken = try #require(journal.take())
        #expect(taken.records == [Self.license(1), Self.license(2)])
        #expect(try journal.append(Self.license(3)) == .full, "the records being folded still count")
        journal.folded(taken.records, file: taken.file)
        #expect(try journal.append(Self.license(3)) == .kept(foldWanted: false))
        #expect(journal.counts == (appended: 3, folded: 2))
    }

    @Test("a fold empties the file it took and keeps the records appended meanwhile, which a new process reads back; a file holding records read back is emptied once nothing waits")
    func foldedFiles() throws {
        let directory = try Self.directory("folded")
        var journal = try AuditJournal.claim(directory: directory)
        #expect(journal != nil)
        _ = try journal?.append(Self.license(1))
        let taken = try #require(journal?.take())
        _ = try journal?.append(Self.license(2))  // to the other file, while the fold writes
        journal?.folded(taken.records, file: taken.file)
        #expect(Self.journalBytes(directory)[taken.file] == 0 && Self.journalBytes(directory)[1 - taken.file] > 0)
        journal?.release()
        journal = nil
        // A new process reads record 2 back; appends go to the file it lies in or the other, whichever is active.
        let again = try #require(try AuditJournal.claim(directory: directory))
        let recovered = try #require(again.take())
        #expect(recovered.records == [Self.license(2)])
        _ = try again.append(Self.license(3))
        again.folded(recovered.records, file: recovered.file)
        #expect(Self.journalBytes(directory).reduce(0, +) > 0, "record 3 waits: its file is kept")
        let next = try #require(again.take())
        #expect(next.records == [Self.license(3)])
        again.folded(next.records, file: next.file)
        #expect(Self.journalBytes(directory) == [0, 0], "nothing waits: both files emptied")
    }
}
