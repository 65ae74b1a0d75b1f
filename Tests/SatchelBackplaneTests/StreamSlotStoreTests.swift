import SatchelBytes
import Foundation
import SQLKit
import Testing
@testable import SatchelBackplane

/// Stream slots on a real SQLite file and, when `SATCHEL_TEST_DATABASE_URL` names one, a real PostgreSQL — there
/// also as two nodes (two connection pools) racing for one account's streams. The store takes the time as a value,
/// so a lease's end is tested without waiting for it. Part of the backplane store's suite: one at a time on its tables.
extension BackplaneStoreTests {
    static func slots(_ stores: [FluentBackplaneStore]) -> [FluentStreamSlots] {
        stores.map { FluentStreamSlots(database: $0.databaseHandle) }
    }

    @Test("an account's third stream for a limit of two is refused (whichever device asks); taken once a lease ends or a slot is released; renewal keeps a slot past its first lease; a lost slot cannot be renewed; listed while held", arguments: BackplaneStoreTests.kinds)
    func slotLimit(kind: String) async throws {
        try await BackplaneStoreTests.using(kind) { (stores, _) async throws in
            let store = stores[0], slots = Self.slots(stores)[0]
            for id in ["phone", "tv", "tablet"] { _ = try await store.register(BackplaneStoreTests.device(id, user: "alice")) }
            _ = try await store.register(BackplaneStoreTests.device("other", user: "bob"))
            try await store.setLimits(BackplaneLimits(maxStreams: 2), user: "alice")
            _ = try await store.updateSettings(BackplaneSettings(streamLease: 30))

            let first = try await slots.acquire(device: "phone", asset: "movie", at: Self.now)
            let second = try await slots.acquire(device: "tv", asset: "show", at: Self.now.addingTimeInterval(1))
            #expect(first.granted && second.granted && first.leaseSeconds == 30)
            #expect(first.slot?.expires == Self.now.addingTimeInterval(30))
            let third = try await slots.acquire(device: "tablet", asset: "movie", at: Self.now.addingTimeInterval(2))
            #expect(!third.granted && third.reason == .streamLimit && third.slot == nil)
            #expect(try await slots.acquire(device: "other", asset: "movie", at: Self.now.addingTimeInterval(2)).granted, "another account's limit")
            #expect(try await slots.slots(user: "alice", at: Self.now.addingTimeInterval(2), page: ListingRequest(limit: 10)).items.map(\.deviceID) == ["phone", "tv"])

            // The phone renews; the tv does not: at 31 s the tv's lease has ended and the tablet takes its place.
            let firstID = try #require(first.slot?.slotID), secondID = try #require(second.slot?.slotID)
            let renewed = try await slots.renew(device: "phone", slot: firstID, at: Self.now.addingTimeInterval(20))
            #expect(renewed.slot?.expires == Self.now.addingTimeInterval(50))
            #expect(!(try await slots.acquire(device: "tablet", asset: "movie", at: Self.now.addingTimeInterval(30))).granted, "the tv's lease ends at 31 s")
            let taken = try await slots.acquire(device: "tablet", asset: "movie", at: Self.now.addingTimeInterval(31))
            #expect(taken.granted)
            await #expect(throws: BackplaneError.slotLost(secondID)) { try await slots.renew(device: "tv", slot: secondID, at: Self.now.addingTimeInterval(32)) }
            await #expect(throws: BackplaneError.slotLost(firstID), "another device's slot") {
                try await slots.renew(device: "tablet", slot: firstID, at: Self.now.addingTimeInterval(32))
            }
            #expect(try await slots.slots(user: "alice", at: Self.now.addingTimeInterval(32), page: ListingRequest(limit: 10)).items.map(\.deviceID) == ["phone", "tablet"])

            // A release frees the slot at once (another device's release of it changes nothing).
            try await slots.release(device: "tv", slot: firstID)
            #expect(!(try await slots.acquire(device: "tv", asset: "show", at: Self.now.addingTimeInterval(33))).granted)
            try await slots.release(device: "phone", slot: firstID)
            #expect(try await slots.acquire(device: "tv", asset: "show", at: Self.now.addingTimeInterval(33)).granted)
            await #expect(throws: BackplaneError.slotLost(firstID)) { try await slots.renew(device: "phone", slot: firstID, at: Self.now.addingTimeInterval(34)) }

            // Killed: refused whatever the count; unknown devices are refused as such.
            _ = try await store.issue(.kill, to: .device("other"), at: Self.now)
            #expect(try await slots.acquire(device: "other", asset: "movie", at: Self.now.addingTimeInterval(40)).reason == .deviceKilled)
            await #expect(throws: BackplaneError.unknownDevice("nobody")) { try await slots.acquire(device: "nobody", asset: "movie", at: Self.now) }
            await #expect(throws: BackplaneError.self) { try await slots.acquire(device: "phone", asset: "", at: Self.now) }
        }
    }

    @Test("two nodes on one PostgreSQL: 200 concurrent slot requests for one account, spread over both nodes and five devices, never hold more than its limit (exact count in the database)")
    func slotsOnTwoNodes() async throws {
        guard BackplaneStoreTests.kinds.contains("postgres") else { return }
        try await BackplaneStoreTests.using("postgres", nodes: 2) { (stores, sql) async throws in
            for index in 0..<5 { _ = try await stores[index % 2].register(BackplaneStoreTests.device("s\(index)", user: "sam")) }
            try await stores[0].setLimits(BackplaneLimits(maxStreams: 3), user: "sam")
            let slots = Self.slots(stores)
            let answers = try await withThrowingTaskGroup(of: StreamSlotAnswer.self) { group in
                var answers: [StreamSlotAnswer] = []
                for index in 0..<200 {
                    if index >= BackplaneStoreTests.inFlight, let answer = try await group.next() { answers.append(answer) }
                    group.addTask { try await slots[index % 2].acquire(device: "s\(index % 5)", asset: "a\(index)", at: Self.now) }
                }
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.filter(\.granted).count == 3)
            #expect(answers.filter { !$0.granted }.allSatisfy { $0.reason == .streamLimit })
            let held = try await sql.raw("SELECT COUNT(*) AS n FROM backplane_slots WHERE user_id = 'sam'").all()
            #expect(try held.first?.decode(column: "n", as: Int.self) == 3)
        }
    }
}

extension BackplaneStoreTests {
    @Test("forgetting a device drops its grants, commands and stream slots and frees its place under the user's limits (registered again, it is enrolled anew); a killed device cannot be forgotten", arguments: BackplaneStoreTests.kinds)
    func forget(kind: String) async throws {
        try await BackplaneStoreTests.using(kind) { (stores, sql) async throws in
            let store = stores[0], slots = Self.slots(stores)[0]
            try await store.setLimits(BackplaneLimits(maxDevices: 1, maxStreams: 1), user: "alice")
            _ = try await store.register(BackplaneStoreTests.device("laptop", user: "alice"))
            #expect(try await store.register(BackplaneStoreTests.device("phone", user: "alice")).notice == .deviceLimitReached)
            #expect(try await store.permission(device: "laptop", asset: "movie", downloadable: true).isGranted)
            _ = try await store.issue(.deleteAsset("other"), to: .device("laptop"), at: Self.now)
            #expect(try await slots.acquire(device: "laptop", asset: "movie", at: Self.now).granted)

            let forgotten = try await store.delete(.device("laptop"))
            #expect(forgotten.deviceID == "laptop" && forgotten.downloadEnabled)
            await #expect(throws: BackplaneError.unknownDevice("laptop")) { try await store.device(.device("laptop")) }
            for table in ["backplane_grants", "backplane_commands", "backplane_slots"] {
                let rows = try await sql.raw("SELECT COUNT(*) AS n FROM \(ident: table) WHERE device_id = 'laptop'").all()
                #expect(try rows.first?.decode(column: "n", as: Int.self) == 0, "\(table)")
            }
            #expect(try await slots.acquire(device: "phone", asset: "movie", at: Self.now).granted, "the stream slot it held is free")
            #expect(try await store.setDownloadEnabled(.device("phone"), true, at: Self.now).downloadEnabled, "its place under the device limit is free")
            #expect(try await store.register(BackplaneStoreTests.device("laptop", user: "alice")).notice == .deviceLimitReached, "enrolled anew, under the limit")

            _ = try await store.issue(.kill, to: .device("phone"), at: Self.now)
            await #expect(throws: BackplaneError.deviceKilled("phone")) { try await store.delete(.device("phone")) }
            #expect(try await store.device(.device("phone")).state == .killed, "a killed device stays on record")
            await #expect(throws: BackplaneError.unknownDevice("nobody")) { try await store.delete(.device("nobody")) }
        }
    }
}
