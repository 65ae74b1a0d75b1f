import Foundation
import SatchelRights
import Testing

@Suite struct SecureClockTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func reading(_ offset: TimeInterval, boot: TimeInterval, bootID: String = "boot-1") -> ClockReading {
        ClockReading(wall: t0.addingTimeInterval(offset), boot: boot, bootID: bootID)
    }

    @Test func aClockThatMovesForwardStaysTrusted() {
        var clock = SecureClock()
        #expect(clock.observe(reading(0, boot: 100)).isEmpty)
        #expect(clock.observe(reading(3600, boot: 3700)).isEmpty)
        #expect(clock.trusted)
        #expect(clock.now(reading(3601, boot: 3701)) == t0.addingTimeInterval(3601))
    }

    @Test func goingBackBeyondTheToleranceIsARollbackReportedOnce() {
        var clock = SecureClock(tolerance: 300)
        _ = clock.observe(reading(0, boot: 100))
        #expect(clock.observe(reading(-301, boot: 101)) == [.untrustedTime])
        #expect(!clock.trusted)
        #expect(clock.now(reading(-301, boot: 101)) == nil)
        #expect(clock.observe(reading(-2 * 86_400, boot: 102)).isEmpty)
        #expect(clock.observe(reading(10, boot: 103)).isEmpty, "the wall clock coming back is not enough")
        #expect(!clock.trusted)
    }

    @Test func goingBackWithinTheToleranceKeepsTrustButNotTheEarlierTime() {
        var clock = SecureClock(tolerance: 300)
        _ = clock.observe(reading(1000, boot: 100))
        #expect(clock.observe(reading(800, boot: 100)).isEmpty)
        #expect(clock.trusted)
        #expect(clock.now(reading(800, boot: 100)) == t0.addingTimeInterval(1000), "rights are counted from the later time")
    }

    @Test func theBootClockCarriesTheFloorForwardWithinOneBoot() {
        var clock = SecureClock(tolerance: 300)
        _ = clock.observe(reading(0, boot: 0))
        // An hour of boot clock has passed but the wall clock only moved ten minutes: it was set back 50 minutes.
        #expect(clock.observe(reading(600, boot: 3600)) == [.untrustedTime])
        var rebooted = SecureClock(tolerance: 300)
        _ = rebooted.observe(reading(0, boot: 50_000))
        #expect(rebooted.observe(reading(600, boot: 10, bootID: "boot-2")).isEmpty, "another boot's clock is not compared")
        #expect(rebooted.observe(reading(-400, boot: 20, bootID: "boot-2")) == [.untrustedTime])
    }

    @Test func onlyTheServersTimeWithAnAgreeingWallClockRestoresTrust() {
        var clock = SecureClock(tolerance: 300)
        _ = clock.observe(reading(0, boot: 0))
        #expect(clock.observe(reading(-2 * 86_400, boot: 10)) == [.untrustedTime])
        // The server says it is t0+20, the device still says two days ago: still untrusted, no event.
        #expect(clock.anchor(serverTime: t0.addingTimeInterval(20), reading(-2 * 86_400, boot: 20)).isEmpty)
        #expect(!clock.trusted)
        #expect(clock.serverTime == t0.addingTimeInterval(20))
        // The user fixes the clock; the next server time agrees.
        #expect(clock.anchor(serverTime: t0.addingTimeInterval(40), reading(30, boot: 40)) == [.trustRestored])
        #expect(clock.trusted)
        #expect(clock.now(reading(31, boot: 41)) == t0.addingTimeInterval(41), "the floor: server time advanced by the boot clock")
        // A second rollback is reported again.
        #expect(clock.observe(reading(-86_400, boot: 50)) == [.untrustedTime])
    }

    @Test func aForwardJumpUndoneNeedsTheServer() {
        var clock = SecureClock(tolerance: 300)
        _ = clock.observe(reading(0, boot: 0))
        _ = clock.observe(reading(10 * 86_400, boot: 10))
        #expect(clock.observe(reading(20, boot: 20)) == [.untrustedTime])
        #expect(clock.anchor(serverTime: t0.addingTimeInterval(25), reading(25, boot: 25)) == [.trustRestored])
        #expect(clock.now(reading(26, boot: 26)) == t0.addingTimeInterval(26), "the high-water mark restarts from the server's time")
    }

    @Test func aWallClockBehindTheServerIsARollbackAndOneAheadIsNot() {
        var behind = SecureClock(tolerance: 300)
        #expect(behind.anchor(serverTime: t0, reading(-301, boot: 0)) == [.untrustedTime])
        var ahead = SecureClock(tolerance: 300)
        #expect(ahead.anchor(serverTime: t0, reading(3 * 86_400, boot: 0)).isEmpty)
        #expect(ahead.trusted)
        #expect(ahead.now(reading(3 * 86_400, boot: 0)) == t0.addingTimeInterval(3 * 86_400))
    }

    @Test func aLicenseInstalledInRollbackModeReportsUntrustedTime() {
        var clock = SecureClock()
        _ = clock.observe(reading(0, boot: 0))
        _ = clock.observe(reading(-86_400, boot: 1))
        let dated = Rights(end: t0.addingTimeInterval(86_400)), undated = Rights()
        let now = clock.now(reading(-86_400, boot: 1))
        #expect(dated.evaluate(RightsUsage(acquired: t0), at: now).status == .untrustedTime)
        #expect(undated.evaluate(RightsUsage(acquired: t0), at: now).status == .valid)
    }

    @Test func theStateSurvivesARoundTripThroughJSON() throws {
        var clock = SecureClock(tolerance: 120)
        _ = clock.observe(reading(0, boot: 7))
        _ = clock.observe(reading(-500, boot: 8))
        let copy = try JSONDecoder().decode(SecureClock.self, from: JSONEncoder().encode(clock))
        #expect(copy == clock)
        #expect(!copy.trusted && copy.tolerance == 120)
    }
}
