import Foundation
import SatchelBytes
@testable import SatchelServer
import Testing

/// The dashboard's pure parts: sessions (login, expiry, capacity, logout) and the hourly chart.
@Suite("Dashboard: sessions and charts")
struct AdminUnitTests {
    final class Clock: @unchecked Sendable {
        var now = Date(timeIntervalSince1970: 1_800_000_000)
    }

    @Test("a session for the operator key only; it ends after its lifetime and at logout; the oldest goes beyond the capacity; a short key is refused")
    func sessions() async throws {
        let clock = Clock()
        let key = SecretBytes(Array("an-operator-key-of-some-length".utf8))
        let sessions = try AdminSessions(operatorKey: key, lifetime: 3600, capacity: 2, now: { clock.now })
        #expect(await sessions.logIn(key: "an-operator-key-of-some-lengtH") == nil)
        #expect(await sessions.logIn(key: "") == nil)
        let first = try #require(await sessions.logIn(key: "an-operator-key-of-some-length"))
        #expect(first.id.count == 43 && first.csrf.count == 43 && first.id != first.csrf)
        #expect(await sessions.session(first.id)?.csrf == first.csrf)
        #expect(await sessions.session("not-a-session") == nil)
        clock.now += 3599
        #expect(await sessions.session(first.id) != nil)
        clock.now += 2
        #expect(await sessions.session(first.id) == nil, "ended after its lifetime")

        let a = try #require(await sessions.logIn(key: "an-operator-key-of-some-length"))
        clock.now += 1
        let b = try #require(await sessions.logIn(key: "an-operator-key-of-some-length"))
        clock.now += 1
        let c = try #require(await sessions.logIn(key: "an-operator-key-of-some-length"))
        #expect(await sessions.session(a.id) == nil, "the oldest made room")
        let (bLive, cLive) = (await sessions.session(b.id), await sessions.session(c.id))
        #expect(bLive != nil && cLive != nil)
        await sessions.logOut(b.id)
        #expect(await sessions.session(b.id) == nil)

        #expect(throws: AdminError.weakOperatorKey) { try AdminSessions(operatorKey: SecretBytes(Array("short".utf8))) }
    }

    @Test("the sign-in budget: 10 failures per address and 10 per wrong key within a minute, then refused until the oldest leaves the window; no budget of all addresses, so 110 guesses from 11 addresses never refuse the right key from a new one; tracked names are bounded")
    func loginBudget() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let right = Array(repeating: UInt8(7), count: 32)
        func guess(_ index: Int) -> [UInt8] { Array(repeating: UInt8(index % 256), count: 31) + [UInt8(index / 256)] }
        var throttle = LoginThrottle()
        for second in 0..<10 {
            #expect(throttle.retryAfter("10.0.0.1", credential: guess(second), at: start + Double(second)) == nil)
            throttle.failed("10.0.0.1", credential: guess(second), at: start + Double(second))
        }
        #expect(throttle.retryAfter("10.0.0.1", credential: right, at: start + 10) == 50, "the first failure leaves the window at 60 s")
        #expect(throttle.retryAfter("10.0.0.2", credential: right, at: start + 10) == nil, "another address has its own budget")
        #expect(throttle.retryAfter("10.0.0.1", credential: right, at: start + 60.5) == nil)
        // One wrong key tried from many addresses spends that key's budget, not the addresses'.
        var stuffing = LoginThrottle()
        for index in 0..<10 { stuffing.failed("10.2.0.\(index)", credential: guess(1), at: start) }
        #expect(stuffing.retryAfter("10.2.9.9", credential: guess(1), at: start + 1) == 59)
        #expect(stuffing.retryAfter("10.2.9.9", credential: right, at: start + 1) == nil)
        // A hundred and ten guesses from eleven addresses: each address is spent, a new one with the right key is not.
        var spread = LoginThrottle()
        for index in 0..<110 { spread.failed("10.1.0.\(index / 10)", credential: guess(index), at: start) }
        #expect(spread.retryAfter("10.1.0.3", credential: right, at: start + 1) == 59)
        #expect(spread.retryAfter("10.9.9.9", credential: right, at: start + 1) == nil)
        var bounded = LoginThrottle()
        bounded.tracked = 3
        for index in 0..<5 { bounded.failed("a\(index)", credential: guess(index), at: start + Double(index)) }
        #expect(bounded.count("a0") == 0 && bounded.count("a4") == 1, "the stalest address is forgotten first")

        // Through the sessions: a throttled sign-in is refused without checking the key; the operator API's keys
        // count against the same budget.
        let key = "an-operator-key-of-some-length"
        let clock = Clock()
        let sessions = try AdminSessions(operatorKey: SecretBytes(Array(key.utf8)), now: { clock.now })
        for index in 0..<10 { if case .signedIn = await sessions.logIn(key: "wrong-\(index)", from: "a") { Issue.record("signed in with a wrong key") } }
        guard case .throttled = await sessions.logIn(key: key, from: "a") else { Issue.record("not throttled"); return }
        guard case .signedIn = await sessions.logIn(key: key, from: "b") else { Issue.record("another address is refused"); return }
        for address in 0..<11 {
            for index in 0..<10 { _ = await sessions.refusal(ofKey: "guess-\(address)-\(index)", from: "10.3.0.\(address)") }
        }
        #expect(await sessions.refusal(ofKey: key, from: "10.3.0.99") == nil, "the right key from a new address, after 110 guesses from 11")
        #expect(await sessions.refusal(ofKey: key, from: "10.3.0.1") == .tooManyLogins(retryAfter: 60))
        clock.now += 61
        guard case .signedIn = await sessions.logIn(key: key, from: "a") else { Issue.record("still throttled after the window"); return }
    }

    @Test("the chart: counts land in their hour, stacks add up, the axis is a round number, text is escaped")
    func chart() {
        let now = Date(timeIntervalSince1970: 1_800_003_000)  // 50 minutes into an hour
        let hours = HourlyChart.hours(endingAt: now, count: 24)
        #expect(hours.count == 24 && hours.last == Date(timeIntervalSince1970: 1_800_000_000) && hours.first == Date(timeIntervalSince1970: 1_800_000_000 - 23 * 3600))
        let dates = [now, now.addingTimeInterval(-600), now.addingTimeInterval(-3600), now.addingTimeInterval(-25 * 3600), now.addingTimeInterval(3600),
                     .distantFuture, .distantPast, Date(timeIntervalSince1970: 1e300)]  // a stored row from any clock: no trap
        let counts = HourlyChart.counts(of: dates, in: hours)
        #expect(counts.last == 2 && counts[22] == 1 && counts.reduce(0, +) == 3, "outside the 24 hours: not counted")
        #expect([0, 1, 2, 3, 5, 6, 11, 99, 100, 101].map(HourlyChart.niceCeiling) == [2, 2, 2, 5, 5, 10, 20, 100, 100, 200])
        let chart = HourlyChart(hours: hours, series: [.init(name: "a<b", cssClass: "s1", counts: counts), .init(name: "c", cssClass: "s2", counts: counts)])
        #expect(chart.total == 6)
        let svg = chart.svg(label: "x & y")
        #expect(svg.contains("aria-label=\"x &amp; y\"") && svg.contains("2 a&lt;b, 2 c") && !svg.contains("a<b"))
        #expect(svg.components(separatedBy: "<rect class=\"s1\"").count - 1 == 2, "one bar per hour with a count")
        #expect(svg.contains(">5</text>") && svg.contains(">2.5</text>"), "the axis: 0, 2.5, 5 for a stack of 4")
    }
}
