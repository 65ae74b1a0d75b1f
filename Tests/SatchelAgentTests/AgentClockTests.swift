import Foundation
import Logging
@testable import SatchelAgent
import SatchelBytes
import SatchelRights
import Testing

/// A clock reader whose readings the test sets: the wall clock set back, the boot clock running on.
final class SteppedClockReader: ClockReader, Sendable {
    private let reading: Locked<ClockReading>

    init(wall: Date, boot: TimeInterval = 1_000) {
        reading = Locked(ClockReading(wall: wall, boot: boot, bootID: "test-boot"))
    }

    func read() -> ClockReading { reading.current }

    /// Moves the boot clock on by `seconds` and sets the wall clock to `wall` (by default, on by as much).
    func advance(_ seconds: TimeInterval, wall: Date? = nil) {
        reading.withLock { $0 = ClockReading(wall: wall ?? $0.wall.addingTimeInterval(seconds), boot: $0.boot + seconds, bootID: $0.bootID) }
    }
}

/// The agent's secure clock and playback grants without a server: an agent on a real store, its clocks read
/// through the test's reader.
@Suite("Agent clock: grants on a clock the test sets")
struct AgentClockTests {
    @Test("a wall clock set back is caught and reported once; the grant a session takes carries the untrusted clock; the store's change count moves with the clock it keeps")
    func rollback() async throws {
        let directory = try DeviceStoreTests.directory("clock")
        let start = Date(timeIntervalSince1970: 1_900_000_000)
        let clock = SteppedClockReader(wall: start)
        let agent = try await Agent(dataDirectory: directory, clockReader: clock, logger: Logger(label: "test"))
        var grant = try await agent.grant(asset: "movie")
        #expect(grant.rights == nil && grant.status(at: clock.read()).status == .noRights)
        #expect(grant.clock.trusted)
        let before = agent.changeCount
        clock.advance(5, wall: start.addingTimeInterval(-3600))  // an hour back, five seconds later by the boot clock
        let after = try await agent.grant(asset: "movie")
        #expect(!after.clock.trusted, "the rollback is seen by the agent too")
        #expect(agent.changeCount != before, "the clock's loss of trust was kept: the count moved")
        var events = agent.events.makeAsyncIterator()
        #expect(await events.next() == .untrustedTime)
        // A session's own evaluation on the same reading agrees.
        #expect(grant.status(at: clock.read()).events == [.untrustedTime])
        await agent.close()
    }
}
