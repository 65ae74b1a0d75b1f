import Foundation
import SatchelRights
import Testing

/// One window rule for the server and the device: the start inclusive, the end exclusive.
@Suite("Date windows")
struct DateWindowTests {
    let start = Date(timeIntervalSince1970: 1_900_000_000)
    var end: Date { start.addingTimeInterval(3600) }

    @Test("the start is inside, the end is outside, a moment before either is on its side")
    func boundaries() {
        let window = DateWindow(start: start, end: end)
        #expect(window.position(at: start.addingTimeInterval(-0.001)) == .before)
        #expect(window.position(at: start) == .within)
        #expect(window.position(at: end.addingTimeInterval(-0.001)) == .within)
        #expect(window.position(at: end) == .after)
        #expect(!window.contains(end) && window.contains(start))
        #expect(DateWindow().contains(.distantPast) && DateWindow().contains(.distantFuture))
        #expect(DateWindow(start: end, end: start).position(at: end) == .after, "an end before the start: over")
        #expect(window.hasStarted(at: end) && !window.hasStarted(at: start.addingTimeInterval(-1)))
    }

    @Test("rights follow the rule: valid at the start, expired at the end")
    func rights() {
        let rights = Rights(start: start, end: end, persistent: false)
        let usage = RightsUsage(acquired: start, firstUse: nil)
        #expect(rights.evaluate(usage, at: start.addingTimeInterval(-1)).status == .inFuture)
        #expect(rights.evaluate(usage, at: start).status == .valid)
        #expect(rights.evaluate(usage, at: end.addingTimeInterval(-1)).status == .valid)
        #expect(rights.evaluate(usage, at: end).status == .expired)
    }
}
