import Foundation
import SQLKit
import SatchelBytes
import Testing
@testable import SatchelBackplane

/// Issue 47, point 2: every operator listing is paged by a keyset cursor. A walk with a small limit returns every
/// row once, in order, while rows are added and removed during the walk; a forged or foreign cursor is refused.
/// (In the serialized store suite: it shares PostgreSQL's tables with it.)
extension BackplaneStoreTests {
    /// Walks a listing `limit` rows at a time, calling `between` after each page (with the page's number).
    static func walk<Item: Sendable>(limit: Int, listing: String, columns: Int = 1, _ fetch: (ListingRequest) async throws -> ListingPage<Item>,
                                     between: (Int) async throws -> Void = { _ in }) async throws -> [Item] {
        var all: [Item] = [], request = ListingRequest(limit: limit), pages = 0
        while true {
            let page = try await fetch(request)
            #expect(page.items.count <= limit)
            all += page.items
            pages += 1
            try await between(pages)
            guard let next = page.next else { return all }
            request.after = try ListingCursor(decoding: next, listing: listing, columns: columns)
            #expect(pages < 10_000, "the walk ends")
        }
    }

    @Test("devices and users walked 4 at a time while devices are added and removed: every device there throughout once, in order; added ahead of the cursor seen, removed ahead not", arguments: kinds)
    func devicesWalk(kind: String) async throws {
        try await Self.using(kind) { (stores, _) async throws in
            let store = stores[0]
            for index in 0..<30 { _ = try await store.register(Self.device(String(format: "d%02d", index * 2), user: String(format: "u%02d", index / 3))) }
            var removed: [String] = [], added: [String] = []
            let walked = try await Self.walk(limit: 4, listing: BackplaneDevice.listing, { try await store.devices(user: nil, page: $0) }) { page in
                guard page == 2 else { return }
                for id in ["d50", "d02"] { removed.append(try await store.delete(.device(id)).deviceID) }  // one ahead, one behind
                for id in ["d51", "d01"] { added.append(try await store.register(Self.device(id, user: "u99")).device.deviceID) }
            }
            let ids = walked.map(\.deviceID)
            #expect(ids == ids.sorted() && Set(ids).count == ids.count, "in order, each once: \(ids)")
            let throughout = (0..<30).map { String(format: "d%02d", $0 * 2) }.filter { !removed.contains($0) }
            #expect(throughout.allSatisfy(ids.contains), "every device there throughout is listed")
            #expect(ids.contains("d51") && !ids.contains("d50") && !ids.contains("d01"), "added ahead seen, removed ahead and added behind not")
            #expect(ids.contains("d02"), "a device removed after it was listed was listed")

            let users = try await Self.walk(limit: 4, listing: backplaneUsersListing, { try await store.users($0) })
            #expect(users == users.sorted() && Set(users).count == users.count && users.count == 11, "\(users)")
            let prefixed = try await Self.walk(limit: 2, listing: BackplaneDevice.listing, { try await store.devices(user: nil, page: ListingRequest(limit: $0.limit, after: $0.after, prefix: "d1")) })
            #expect(prefixed.map(\.deviceID) == ["d10", "d12", "d14", "d16", "d18"], "a prefix lists the IDs that start with it")
            let own = try await Self.walk(limit: 1, listing: BackplaneDevice.listing, { try await store.devices(user: "u01", page: $0) })
            #expect(own.map(\.deviceID) == ["d06", "d08", "d10"])
        }
    }

    @Test("the limits listed 3 at a time, users with limits of their own only, while limits are set and removed: each user with their own once, in order, with their limits; the global limits on every page; a prefix lists the users it starts", arguments: kinds)
    func limitsWalk(kind: String) async throws {
        try await Self.using(kind) { (stores, _) async throws in
            let store = stores[0]
            try await store.setLimits(BackplaneLimits(maxDevices: 4), user: nil)
            for index in 0..<20 { _ = try await store.register(Self.device(String(format: "d%02d", index), user: String(format: "u%02d", index))) }
            for index in stride(from: 0, to: 20, by: 2) { try await store.setLimits(BackplaneLimits(maxStreams: index + 1), user: String(format: "u%02d", index)) }
            var pages: [LimitsPage] = []
            let walked = try await Self.walk(limit: 3, listing: backplaneLimitsListing, { request in
                let page = try await store.limits(request)
                pages.append(page)
                return ListingPage(items: page.users, next: page.next)
            }) { page in
                guard page == 2 else { return }
                try await store.setLimits(.none, user: "u18")  // ahead: no longer listed
                try await store.setLimits(BackplaneLimits(maxDownloads: 3), user: "u19")  // ahead: listed
                try await store.setLimits(BackplaneLimits(maxDownloads: 3), user: "u01")  // behind: not
            }
            let users = walked.map(\.user)
            #expect(users == ["u00", "u02", "u04", "u06", "u08", "u10", "u12", "u14", "u16", "u19"], "\(users)")
            #expect(walked.first?.limits == BackplaneLimits(maxStreams: 1) && walked.last?.limits == BackplaneLimits(maxDownloads: 3))
            #expect(pages.allSatisfy { $0.global == BackplaneLimits(maxDevices: 4) } && pages.count == 4)
            let prefixed = try await store.limits(ListingRequest(limit: 10, prefix: "u1"))
            #expect(prefixed.users.map(\.user) == ["u10", "u12", "u14", "u16", "u19"] && prefixed.next == nil)
        }
    }

    @Test("events walked 3 at a time, the last received first, while more arrive: each once, none of the new ones (they are behind the cursor)", arguments: kinds)
    func eventsWalk(kind: String) async throws {
        try await Self.using(kind) { (_, sql) async throws in
            let events = FluentEventStore(database: sql)
            for batch in 0..<4 {
                let batchEvents = (0..<5).map { DeviceEvent(eventID: "event-\(batch)-\($0)", kind: .playStart, time: Self.now, assetID: "a") }
                _ = try await events.record(batchEvents, device: "phone", user: "alice", received: Self.now.addingTimeInterval(Double(batch)))
            }
            let walked = try await Self.walk(limit: 3, listing: RecordedEvent.listing, columns: 2, { try await events.events(EventQuery(), page: $0) }) { page in
                guard page == 1 else { return }
                _ = try await events.record([DeviceEvent(eventID: "late-event", kind: .playStop, time: Self.now)], device: "phone", user: "alice",
                                            received: Self.now.addingTimeInterval(10))
            }
            let ids = walked.map(\.event.eventID)
            #expect(ids.count == 20 && Set(ids).count == 20 && !ids.contains("late-event"), "\(ids)")
            #expect(ids.first == "event-3-4" && ids.last == "event-0-0", "the last received first, a batch in reverse of its order")
        }
    }

    @Test("a forged cursor, another listing's cursor, a limit out of range or a prefix longer than an ID is a clear refusal (400)")
    func forgedCursor() throws {
        #expect(throws: ListingError.self) { try ListingRequest(limit: nil, after: "not a cursor", listing: "devices", columns: 1) }
        let users = ListingCursor(listing: "users", key: ["alice"]).encoded
        do {
            _ = try ListingRequest(limit: nil, after: users, listing: "devices", columns: 1)
            Issue.record("a users cursor was taken by the devices listing")
        } catch {
            #expect(error.httpStatus == 400 && error.description.contains("users listing"), "\(error)")
        }
        #expect(throws: ListingError.self) { try ListingRequest(limit: nil, after: ListingCursor(listing: "events", key: ["1"]).encoded, listing: "events", columns: 2) }
        for limit in ["0", "1001", "ten", "-1"] {
            #expect(throws: ListingError.badLimit("limit is a whole number from 1 to 1000")) { try ListingRequest(limit: limit, after: nil, listing: "devices", columns: 1) }
        }
        #expect(try ListingRequest(limit: nil, after: nil, listing: "devices", columns: 1).limit == 100)
        #expect(throws: ListingError.badPrefix("prefix is at most 200 characters: the start of an ID")) {
            try ListingRequest(limit: nil, after: nil, prefix: String(repeating: "0", count: 201), listing: "users", columns: 1)
        }
        #expect(try ListingRequest(limit: nil, after: nil, prefix: String(repeating: "é", count: 200), listing: "users", columns: 1).prefix?.count == 200)
    }
}
