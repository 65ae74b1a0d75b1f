import Foundation
import SatchelRights
import Testing

/// A session's rights evaluated in memory: as strict as the agent's store, reading the clocks every time.
@Suite("Playback grants")
struct PlaybackGrantTests {
    let start = Date(timeIntervalSince1970: 1_900_000_000)

    func reading(wall: TimeInterval, boot: TimeInterval) -> ClockReading {
        ClockReading(wall: start.addingTimeInterval(wall), boot: boot, bootID: "boot-1")
    }

    @Test("a wall clock set back between two requests is caught at the second: untrusted time, reported once")
    func rollback() {
        var clock = SecureClock()
        _ = clock.observe(reading(wall: 0, boot: 100))
        var grant = PlaybackGrant(rights: Rights(end: start.addingTimeInterval(3600), persistent: false), usage: RightsUsage(acquired: start), clock: clock)
        #expect(grant.status(at: reading(wall: 5, boot: 105)) == (.valid, []))
        #expect(grant.status(at: reading(wall: -3600, boot: 106)) == (.untrustedTime, [.untrustedTime]))
        #expect(grant.status(at: reading(wall: 10, boot: 110)) == (.untrustedTime, []), "trust comes back only with the server's time")
    }

    @Test("the end passes mid-play: the boot clock carries the floor past it even if the wall clock stands still")
    func endPasses() {
        var clock = SecureClock()
        _ = clock.observe(reading(wall: 0, boot: 100))
        var grant = PlaybackGrant(rights: Rights(end: start.addingTimeInterval(10), persistent: false), usage: RightsUsage(acquired: start), clock: clock)
        #expect(grant.status(at: reading(wall: 9, boot: 109)).status == .valid)
        #expect(grant.status(at: reading(wall: 9, boot: 111)).status == .expired)
        var none = PlaybackGrant(rights: nil, usage: RightsUsage(acquired: start), clock: clock)
        #expect(none.status(at: reading(wall: 0, boot: 100)).status == .noRights)
        var fixed = PlaybackGrant.fixed(.expired)
        #expect(fixed.status(at: reading(wall: 0, boot: 0)) == (.expired, []))
    }
}
