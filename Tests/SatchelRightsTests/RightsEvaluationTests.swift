import Foundation
import SatchelRights
import Testing

@Suite struct RightsEvaluationTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func undatedRightsAreValidAlwaysEvenWithoutTrustedTime() {
        let rights = Rights(persistent: true)
        let usage = RightsUsage(acquired: t0)
        #expect(!rights.isDateBased)
        #expect(rights.evaluate(usage, at: t0).status == .valid)
        #expect(rights.evaluate(usage, at: nil).status == .valid)
        #expect(rights.evaluate(usage, at: t0).end == nil)
    }

    @Test func startIsInclusiveAndEndExclusive() {
        let start = t0.addingTimeInterval(3600), end = t0.addingTimeInterval(7200)
        let rights = Rights(start: start, end: end)
        let usage = RightsUsage(acquired: t0)
        #expect(rights.evaluate(usage, at: start.addingTimeInterval(-1)).status == .inFuture)
        #expect(rights.evaluate(usage, at: start).status == .valid)
        #expect(rights.evaluate(usage, at: end.addingTimeInterval(-1)).status == .valid)
        #expect(rights.evaluate(usage, at: end).status == .expired)
        let answer = rights.evaluate(usage, at: start)
        #expect(answer.start == start && answer.end == end && !answer.expireAfterFirstUse)
    }

    @Test func datedRightsReportUntrustedTimeWithoutATrustedClock() {
        for rights in [Rights(end: t0), Rights(start: t0), Rights(validitySeconds: 60), Rights(playbackSeconds: 60)] {
            #expect(rights.isDateBased)
            #expect(rights.evaluate(RightsUsage(acquired: t0), at: nil).status == .untrustedTime)
        }
    }

    @Test func aRentalCountsFromAcquisitionAndEndsAtTheEarlierDate() {
        let usage = RightsUsage(acquired: t0)
        let rental = Rights(validitySeconds: 3600)
        #expect(rental.evaluate(usage, at: t0.addingTimeInterval(3599)).status == .valid)
        #expect(rental.evaluate(usage, at: t0.addingTimeInterval(3600)).status == .expired)
        let capped = Rights(end: t0.addingTimeInterval(600), validitySeconds: 3600)
        #expect(capped.evaluate(usage, at: t0).end == t0.addingTimeInterval(600))
        #expect(capped.evaluate(usage, at: t0.addingTimeInterval(600)).status == .expired)
    }

    @Test func thePlaybackWindowStartsAtFirstUse() {
        let rights = Rights(end: t0.addingTimeInterval(30 * 86_400), playbackSeconds: 48 * 3600)
        var usage = RightsUsage(acquired: t0)
        let before = rights.evaluate(usage, at: t0.addingTimeInterval(10 * 86_400))
        #expect(before.status == .valid && before.expireAfterFirstUse && before.end == t0.addingTimeInterval(30 * 86_400))
        usage.firstUse = t0.addingTimeInterval(86_400)
        let during = rights.evaluate(usage, at: t0.addingTimeInterval(86_400 + 3600))
        #expect(during.status == .valid && !during.expireAfterFirstUse && during.end == t0.addingTimeInterval(86_400 + 48 * 3600))
        #expect(rights.evaluate(usage, at: t0.addingTimeInterval(86_400 + 48 * 3600)).status == .expired)
        let windowOnly = Rights(playbackSeconds: 60)
        #expect(windowOnly.evaluate(RightsUsage(acquired: t0), at: t0.addingTimeInterval(1e9)).status == .valid)
        #expect(windowOnly.evaluate(RightsUsage(acquired: t0), at: t0).end == nil)
    }

    @Test func narrowingNeverWidens() {
        let asset = Rights(start: t0, end: t0.addingTimeInterval(1000), validitySeconds: 500, persistent: true,
                           output: OutputControls(hdcp: .type0, airPlay: true))
        let token = Rights(start: t0.addingTimeInterval(10), end: t0.addingTimeInterval(2000), validitySeconds: 900, playbackSeconds: 60,
                           persistent: false, output: OutputControls(hdcp: .none, airPlay: false))
        let both = asset.narrowed(to: token)
        #expect(both.start == t0.addingTimeInterval(10) && both.end == t0.addingTimeInterval(1000))
        #expect(both.validitySeconds == 500 && both.playbackSeconds == 60 && !both.persistent)
        #expect(both.output.hdcp == .type0 && !both.output.airPlay && both.output.analog)
        #expect(asset.narrowed(to: Rights(persistent: true)).persistent)
    }

    @Test func renewalIsDueAfterItsIntervalOrNearTheEnd() {
        let rights = Rights(validitySeconds: 3600, renewalSeconds: 600)
        let usage = RightsUsage(acquired: t0)
        #expect(!rights.renewalDue(usage, at: t0.addingTimeInterval(599)))
        #expect(rights.renewalDue(usage, at: t0.addingTimeInterval(600)))
        let short = Rights(end: t0.addingTimeInterval(700), renewalSeconds: 600)
        #expect(short.renewalDue(usage, at: t0.addingTimeInterval(200)))
        #expect(!Rights(validitySeconds: 60).renewalDue(usage, at: t0.addingTimeInterval(1e6)))
    }

    @Test func statusesEncodeAsTheCommandLineNamesThem() throws {
        let names = RightsStatus.allCases.map(\.rawValue)
        #expect(names == ["valid", "no-rights", "in-future", "expired", "untrusted-time"])
        #expect(RightsEvaluation.none.status == .noRights)
    }

    @Test("output controls against the output an app declares (seed 000 §5.3.4): a kind of output the license forbids, or an external output below its HDCP, is refused with the reason; the device's own screen needs no HDCP")
    func outputs() {
        let strict = OutputControls(hdcp: .type1, airPlay: false, externalDisplay: true, analog: false)
        #expect(strict.refusal(for: OutputCapabilities()) == nil, "the device's own screen")
        #expect(strict.refusal(for: OutputCapabilities(hdcp: .type1, kind: .airPlay)) == "the license does not allow AirPlay")
        #expect(strict.refusal(for: OutputCapabilities(hdcp: .type1, kind: .analog)) == "the license does not allow analog outputs")
        #expect(strict.refusal(for: OutputCapabilities(hdcp: .type0, kind: .external)) == "the license requires HDCP type1; the output has type0")
        #expect(strict.refusal(for: OutputCapabilities(hdcp: .type1, kind: .external)) == nil)
        let open = OutputControls()
        for kind in OutputCapabilities.Kind.allCases { #expect(open.refusal(for: OutputCapabilities(kind: kind)) == nil, "\(kind)") }
    }
}
