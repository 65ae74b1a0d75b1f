import Foundation
import SatchelBytes
import SatchelRights

extension Agent {
    /// How far the secure clock's high-water mark may run ahead of what is stored before it is stored again: the
    /// clock is kept on a change of trust and at most once a minute otherwise (never per segment served). Nothing
    /// is lost meanwhile: the stored mark is advanced by the boot clock when it is read.
    static let clockPersistInterval: TimeInterval = 60

    /// Reads the clocks against the stored secure clock (a rollback is reported once) and answers the trusted
    /// time; the clock is stored again when its trust changed or its mark moved on by a minute.
    func trustedNow(_ snapshot: LicenseStore.Snapshot) async throws(AgentError) -> Date? {
        let reading = clockReader.read()
        var clock = snapshot.state.clock
        let events = clock.observe(reading)
        let stale = (clock.highWater ?? .distantPast).timeIntervalSince(snapshot.state.clock.highWater ?? .distantPast) >= Self.clockPersistInterval
        if !events.isEmpty || stale {
            try await store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
                _ = state.clock.observe(reading)
                return ((), [])
            }
        }
        report(events)
        return clock.now(reading)
    }

    /// The time a request is dated with: the server's own time as the secure clock estimates it (its last signed
    /// time advanced by the boot clock), asking the server for its signed time first when there is none in this
    /// boot; else the later of the clock's floor and the wall clock.
    func requestTime(server: String) async throws(AgentError) -> Date {
        let snapshot = try? await store.snapshot()
        let reading = clockReader.read()
        if let estimate = snapshot?.state.clock.serverNow(reading) { return estimate }
        if let fetched = try? await fetchTime(server: server) { return fetched.addingTimeInterval(max(0, clockReader.read().boot - reading.boot)) }
        let clock = snapshot?.state.clock ?? SecureClock()
        return clock.now(reading) ?? max(clock.floor(reading) ?? reading.wall, reading.wall)
    }

    /// The server's signed time, anchoring the secure clock.
    @discardableResult
    func fetchTime(server: String) async throws(AgentError) -> Date {
        let registration = try identity.registered()
        let nonce = Hex.encode(SecureRandom.bytes(16))
        let client = try LicenseServerClient(server: server, timeout: .seconds(10))
        let answer = try Self.decode(TimeAnswer.self, try await client.get("/time?nonce=\(nonce)"), what: "the time")
        let reading = clockReader.read()
        let claims: SignedTimeClaims
        do {
            claims = try SignedToken.verify(answer.time, as: SignedTimeClaims.self, key: registration.serverKeys.key(for: answer.time))
        } catch {
            throw .invalidAnswer("the signed time does not verify: \(error.description)")
        }
        guard claims.nonce == nonce else { throw .invalidAnswer("the signed time is not the answer to this request") }
        let events = try await store.change { (state, _) throws(AgentError) -> ([ClockEvent], [LicenseStore.RowChange]) in
            (state.clock.anchor(serverTime: claims.time, reading), [])
        }
        report(events)
        return claims.time
    }

    /// Reports the secure clock's events (the log, and the event stream).
    func report(_ events: [ClockEvent]) {
        for event in events {
            switch event {
            case .untrustedTime:
                logger.notice("the device clock went back: date-based rights are untrusted until the server's time confirms it")
                report(.untrustedTime)
            case .trustRestored:
                logger.info("the server's time confirmed the device clock")
                report(.trustRestored)
            }
        }
    }
}
