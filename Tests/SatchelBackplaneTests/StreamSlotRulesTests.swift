import Foundation
import Testing
@testable import SatchelBackplane

/// Stream slots' rules with values (seed 004 "Secure Lease", "Simultaneous Renting and Leasing"): the account's limit
/// at and around its boundary, a lease's end, renewal before and after it.
@Suite("Stream slot rules")
struct StreamSlotRulesTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func device(state: BackplaneDevice.State = .active) -> BackplaneDevice {
        BackplaneDevice(deviceID: "d1", user: "alice", downloadEnabled: false, state: state, registered: now)
    }

    @Test("a slot is taken while the account holds fewer than its limit, refused with stream-limit at and above it; no limit takes any number; a killed device is refused whatever the count; a disabled download toggle does not stop streaming")
    func acquire() {
        let two = BackplaneLimits(maxStreams: 2)
        #expect(StreamSlotRules.refusal(device: Self.device(), heldSlots: 0, limits: two) == nil)
        #expect(StreamSlotRules.refusal(device: Self.device(), heldSlots: 1, limits: two) == nil)
        #expect(StreamSlotRules.refusal(device: Self.device(), heldSlots: 2, limits: two) == .streamLimit)
        #expect(StreamSlotRules.refusal(device: Self.device(), heldSlots: 3, limits: two) == .streamLimit)
        #expect(StreamSlotRules.refusal(device: Self.device(), heldSlots: 0, limits: BackplaneLimits(maxStreams: 0)) == .streamLimit)
        #expect(StreamSlotRules.refusal(device: Self.device(), heldSlots: 10_000, limits: .none) == nil)
        #expect(StreamSlotRules.refusal(device: Self.device(state: .killed), heldSlots: 0, limits: .none) == .deviceKilled)
    }

    @Test("a lease ends its length after it is taken or renewed; it holds until then and is free at its end; renewal before the end moves the end, at or after it is refused slot-lost")
    func leases() throws {
        let end = StreamSlotRules.leaseEnd(from: Self.now, lease: 30)
        #expect(end == Self.now.addingTimeInterval(30))
        let slot = StreamSlot(slotID: "s1", user: "alice", deviceID: "d1", assetID: "movie", acquired: Self.now, expires: end)
        #expect(slot.isHeld(at: Self.now.addingTimeInterval(29.999)))
        #expect(!slot.isHeld(at: end))
        let renewed = try StreamSlotRules.renewed(slot, at: Self.now.addingTimeInterval(20), lease: 30)
        #expect(renewed.expires == Self.now.addingTimeInterval(50))
        #expect(renewed.acquired == Self.now && renewed.slotID == "s1")
        #expect(throws: BackplaneError.slotLost("s1")) { try StreamSlotRules.renewed(slot, at: end, lease: 30) }
        #expect(throws: BackplaneError.slotLost("s1")) { try StreamSlotRules.renewed(slot, at: end.addingTimeInterval(1), lease: 30) }
        #expect(BackplaneError.slotLost("s1").httpStatus == 410 && BackplaneError.slotLost("s1").code == "slot-lost")
    }

    @Test("a user's stream limit overrides the global one field by field; limits and leases out of range are refused")
    func limitsAndSettings() {
        let table = LimitTable(global: BackplaneLimits(maxDevices: 3, maxStreams: 4), perUser: ["bob": BackplaneLimits(maxStreams: 1)])
        #expect(table.limits(for: "bob") == BackplaneLimits(maxDevices: 3, maxStreams: 1))
        #expect(table.limits(for: "alice").maxStreams == 4)
        #expect(throws: BackplaneError.self) { try BackplaneLimits(maxStreams: -1).validated() }
        #expect(throws: BackplaneError.self) { try BackplaneSettings(streamLease: 0).validated() }
        #expect(throws: BackplaneError.self) { try BackplaneSettings(streamLease: 86_401).validated() }
        #expect(BackplaneSettings(streamLease: 20).updated(with: BackplaneSettings(headroom: 5)).streamLease == 20)
    }

    @Test("the answers' JSON: a granted slot carries the slot and the lease, a refusal its reason and text")
    func answers() throws {
        let slot = StreamSlot(slotID: "s1", user: "alice", deviceID: "d1", assetID: "movie", acquired: Self.now, expires: Self.now.addingTimeInterval(60))
        let granted = try JSONSerialization.jsonObject(with: JSONEncoder().encode(StreamSlotAnswer(granted: slot, leaseSeconds: 60))) as? [String: Any]
        #expect(granted?["granted"] as? Bool == true && granted?["leaseSeconds"] as? Int == 60 && granted?["reason"] == nil)
        let refused = try JSONSerialization.jsonObject(with: JSONEncoder().encode(StreamSlotAnswer(assetID: "movie", refused: .streamLimit, leaseSeconds: 60)))
            as? [String: Any]
        #expect(refused?["granted"] as? Bool == false && refused?["reason"] as? String == "stream-limit" && refused?["slot"] == nil)
        #expect((refused?["detail"] as? String)?.contains("as many streams") == true)
    }
}
