import Foundation
import SQLKit
import Testing
@testable import SatchelBackplane

/// Device events (seed 003 "Event Logging"): the rules with values, and the store on a real SQLite file and, when
/// `SATCHEL_TEST_DATABASE_URL` names one, a real PostgreSQL (part of the backplane store's suite: one at a time).
@Suite("Device event rules")
struct DeviceEventRulesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("the seed's six mandatory events are recorded whatever the settings; the others unless turned off; settings that turn a mandatory one off are refused with its name")
    func mandatory() throws {
        let mandatory = DeviceEventKind.allCases.filter(\.isMandatory)
        #expect(Set(mandatory) == [.downloadQueued, .downloadStarted, .downloadCompleted, .downloadError, .maxErrorsReset, .reset])
        for kind in DeviceEventKind.allCases {
            #expect(EventRules.records(kind, disabled: nil))
            #expect(EventRules.records(kind, disabled: DeviceEventKind.allCases) == kind.isMandatory)
        }
        #expect(!EventRules.records(.playStart, disabled: [.playStart]) && EventRules.records(.playStop, disabled: [.playStart]))
        #expect(throws: BackplaneError.self) { try BackplaneSettings(disabledEvents: [.playStart, .downloadCompleted]).validated() }
        #expect(try BackplaneSettings(disabledEvents: [.playStart, .deleted]).validated().disabledEvents == [.playStart, .deleted])
        #expect(BackplaneSettings(disabledEvents: [.deleted]).updated(with: BackplaneSettings(disabledEvents: [])).disabledEvents == [])
    }

    @Test("an event is refused for a malformed ID, an over-long asset, reason or detail, or seconds that are negative or not finite")
    func validation() throws {
        let good = DeviceEvent(kind: .playStop, time: Self.now, assetID: "movie", seconds: 12.5)
        #expect(try good.validated() == good)
        for bad in [DeviceEvent(eventID: "short", kind: .reset, time: Self.now), DeviceEvent(eventID: "UPPER-CASE-ID", kind: .reset, time: Self.now),
                    DeviceEvent(kind: .reset, time: Self.now, assetID: ""), DeviceEvent(kind: .reset, time: Self.now, assetID: String(repeating: "a", count: 201)),
                    DeviceEvent(kind: .reset, time: Self.now, reason: String(repeating: "r", count: 101)),
                    DeviceEvent(kind: .reset, time: Self.now, detail: String(repeating: "d", count: 501)),
                    DeviceEvent(kind: .playStop, time: Self.now, seconds: -1), DeviceEvent(kind: .playStop, time: Self.now, seconds: .infinity)] {
            #expect(throws: BackplaneError.self) { try bad.validated() }
        }
    }

    @Test("a device's budget of events: 5,000 at once and an hour, in events and in bytes; a batch over what is left is refused whole with the wait until it fits; other devices have their own; a batch that can never fit waits an hour; tracked devices are bounded")
    func quota() {
        var quota = EventQuota()
        #expect(quota.take(device: "phone", events: 500, bytes: 500 * 200, at: Self.now) == nil)
        for _ in 0..<9 { #expect(quota.take(device: "phone", events: 500, bytes: 500 * 200, at: Self.now) == nil) }
        #expect(quota.take(device: "phone", events: 500, bytes: 500 * 200, at: Self.now) == 360, "500 events at 5,000 an hour: 6 minutes")
        #expect(quota.take(device: "tv", events: 500, bytes: 500 * 200, at: Self.now) == nil, "another device's budget")
        #expect(quota.take(device: "phone", events: 500, bytes: 500 * 200, at: Self.now + 360) == nil, "refilled")
        #expect(quota.take(device: "phone", events: 1, bytes: 100, at: Self.now + 360) == 1)
        var bytes = EventQuota()
        #expect(bytes.take(device: "phone", events: 10, bytes: 5 << 20, at: Self.now) == nil)
        #expect(bytes.take(device: "phone", events: 10, bytes: 1 << 20, at: Self.now) == 720, "a megabyte at 5 MB an hour")
        #expect(bytes.take(device: "phone", events: 5_001, bytes: 0, at: Self.now + 86_400) == 3600, "never fits")
        var bounded = EventQuota()
        bounded.devices = 2
        for device in ["a", "b", "c"] { _ = bounded.take(device: device, events: 5_000, bytes: 0, at: Self.now) }
        #expect(bounded.take(device: "c", events: 1, bytes: 0, at: Self.now) != nil, "the newest device is still tracked")
    }

    @Test("a device's time for an event is kept within five minutes ahead of its receipt and a year behind")
    func storedTime() {
        let far = Date(timeIntervalSince1970: 253_402_214_400)  // 9999-12-31
        #expect(EventRules.storedTime(far, received: Self.now) == Self.now + 300)
        #expect(EventRules.storedTime(.distantPast, received: Self.now) == Self.now - 366 * 86_400)
        #expect(EventRules.storedTime(Self.now - 86_400, received: Self.now) == Self.now - 86_400)
    }

    @Test("a count is {\"kind\": …, \"count\": N}, the key named by its grouping, and reads back")
    func countJSON() throws {
        let count = EventCount(grouping: .kind, key: "download-completed", count: 3)
        let object = try JSONSerialization.jsonObject(with: JSONEncoder().encode(count)) as? [String: Any]
        #expect(object?["kind"] as? String == "download-completed" && object?["count"] as? Int == 3 && object?.count == 2)
        #expect(try JSONDecoder().decode(EventCount.self, from: JSONEncoder().encode(EventCount(grouping: .asset, key: "a", count: 1))).grouping == .asset)
    }
}

extension BackplaneStoreTests {
    @Test("events: a batch kept once (sent again, nothing new), listed newest first and filtered by device, user, kind, asset and time; counted by kind, user, asset and device; a batch over 500 or with a malformed event is refused whole", arguments: BackplaneStoreTests.kinds)
    func events(kind: String) async throws {
        try await BackplaneStoreTests.using(kind) { (_, sql) async throws in
            let store = FluentEventStore(database: sql)
            let now = BackplaneStoreTests.now
            var phone: [DeviceEvent] = []
            for (index, asset) in ["a", "b", "c"].enumerated() {
                let at = now.addingTimeInterval(Double(index * 10))
                phone += [DeviceEvent(kind: .downloadQueued, time: at, assetID: asset), DeviceEvent(kind: .downloadCompleted, time: at.addingTimeInterval(5), assetID: asset)]
            }
            #expect(try await store.record(phone, device: "phone", user: "alice", received: now) == 6)
            #expect(try await store.record(phone, device: "phone", user: "alice", received: now) == 0, "sent again: kept once")
            let tv = [DeviceEvent(kind: .playStop, time: now.addingTimeInterval(100), assetID: "a", seconds: 42), DeviceEvent(kind: .reset, time: now.addingTimeInterval(101))]
            #expect(try await store.record(tv, device: "tv", user: "bob", received: now) == 2)

            let all = try await store.events(EventQuery(), limit: 100)
            #expect(all.count == 8 && all.first?.event.kind == .reset && all.first?.deviceID == "tv", "newest first")
            #expect(all.first { $0.event.kind == .playStop }?.event.seconds == 42)
            #expect(Set(all.map(\.event.eventID)) == Set((phone + tv).map(\.eventID)), "the device's event IDs read back")
            #expect(try await store.events(EventQuery(user: "alice", kind: .downloadCompleted), limit: 100).map(\.event.assetID) == ["c", "b", "a"])
            #expect(try await store.events(EventQuery(device: "tv"), limit: 100).count == 2)
            #expect(try await store.events(EventQuery(asset: "a"), limit: 100).count == 3)
            #expect(try await store.events(EventQuery(since: now.addingTimeInterval(10), until: now.addingTimeInterval(20)), limit: 100).count == 2)
            #expect(try await store.events(EventQuery(), limit: 3).count == 3)

            let byKind = try await store.counts(EventQuery(), by: .kind, limit: 100)
            #expect(byKind.first == EventCount(grouping: .kind, key: "download-completed", count: 3) || byKind.first == EventCount(grouping: .kind, key: "download-queued", count: 3))
            #expect(Dictionary(uniqueKeysWithValues: byKind.map { ($0.key, $0.count) }) == ["download-queued": 3, "download-completed": 3, "play-stop": 1, "reset": 1])
            #expect(try await store.counts(EventQuery(), by: .user, limit: 100) == [EventCount(grouping: .user, key: "alice", count: 6), EventCount(grouping: .user, key: "bob", count: 2)])
            #expect(try await store.counts(EventQuery(kind: .downloadCompleted), by: .asset, limit: 100).map(\.count) == [1, 1, 1])
            #expect(try await store.counts(EventQuery(), by: .asset, limit: 100).first == EventCount(grouping: .asset, key: "a", count: 3))
            #expect(try await store.counts(EventQuery(), by: .device, limit: 100).map(\.key) == ["phone", "tv"])

            // A device dated 9999-12-31: kept as five minutes after its receipt, so it does not sort first for ever.
            let far = DeviceEvent(kind: .reset, time: Date(timeIntervalSince1970: 253_402_214_400))
            #expect(try await store.record([far], device: "clock", user: "eve", received: now) == 1)
            #expect(try await store.events(EventQuery(device: "clock"), limit: 1).first?.event.time == now.addingTimeInterval(300))
            #expect(try await store.record([far], device: "clock", user: "eve", received: now) == 0, "sent again: kept once")

            let tooMany = (0..<501).map { _ in DeviceEvent(kind: .playStart, time: now) }
            await #expect(throws: BackplaneError.self) { try await store.record(tooMany, device: "tv", user: "bob", received: now) }
            let oneBad = [DeviceEvent(kind: .playStart, time: now), DeviceEvent(eventID: "bad", kind: .playStart, time: now)]
            await #expect(throws: BackplaneError.self) { try await store.record(oneBad, device: "tv", user: "bob", received: now) }
            #expect(try await store.events(EventQuery(device: "tv"), limit: 100).count == 2, "nothing of a refused batch is kept")
        }
    }
}
