import Foundation
import SatchelBytes
import SatchelRights

/// The agent's secure clock: read against the stored clock (a rollback reported once), kept on a change of trust and
/// at most once a minute, and the server's time for dating requests and anchoring the clock. Runs on the agent's
/// isolation.
enum AgentClock {
    /// How far the secure clock's high-water mark may run ahead of what is stored before it is stored again: the
    /// clock is kept on a change of trust and at most once a minute otherwise (never per segment served). Nothing
    /// is lost meanwhile: the stored mark is advanced by the boot clock when it is read.
    static let persistInterval: TimeInterval = 60

    /// Reads the clocks against the stored secure clock (a rollback is reported once) and answers the trusted
    /// time; the clock is stored again when its trust changed or its mark moved on by a minute.
    static func trustedNow(_ agent: isolated Agent, _ snapshot: LicenseStore.Snapshot) async throws(AgentError) -> Date? {
        let reading = agent.clockReader.read()
        return try await observe(agent, reading, in: snapshot).now(reading)
    }

    /// The secure clock of `snapshot` after `reading` (a rollback is reported once), stored again when its trust
    /// changed or its mark moved on by a minute.
    static func observe(_ agent: isolated Agent, _ reading: ClockReading, in snapshot: LicenseStore.Snapshot) async throws(AgentError) -> SecureClock {
        var clock = snapshot.state.clock
        let events = clock.observe(reading)
        let stale = (clock.highWater ?? .distantPast).timeIntervalSince(snapshot.state.clock.highWater ?? .distantPast) >= persistInterval
        if !events.isEmpty || stale {
            try await agent.store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
                _ = state.clock.observe(reading)
                return ((), [])
            }
        }
        agent.report(events)
        return clock
    }

    /// The time a request is dated with: the server's own time as the secure clock estimates it (its last signed
    /// time advanced by the boot clock), asking the server for its signed time first when there is none in this
    /// boot; else the later of the clock's floor and the wall clock.
    static func requestTime(_ agent: isolated Agent, server: String) async throws(AgentError) -> Date {
        let snapshot = try? await agent.store.snapshot()
        let reading = agent.clockReader.read()
        if let estimate = snapshot?.state.clock.serverNow(reading) { return estimate }
        if let fetched = try? await fetchTime(agent, server: server) {
            return fetched.addingTimeInterval(max(0, agent.clockReader.read().boot - reading.boot))
        }
        let clock = snapshot?.state.clock ?? SecureClock()
        return clock.now(reading) ?? max(clock.floor(reading) ?? reading.wall, reading.wall)
    }

    /// The server's signed time, anchoring the secure clock.
    @discardableResult
    static func fetchTime(_ agent: isolated Agent, server: String) async throws(AgentError) -> Date {
        let registration = try agent.identity.registered()
        let nonce = Hex.encode(SecureRandom.bytes(16))
        let client = try LicenseServerClient(server: server, timeout: .seconds(10))
        let answer = try Agent.decode(TimeAnswer.self, try await client.get("/time?nonce=\(nonce)"), what: "the time")
        let reading = agent.clockReader.read()
        let claims: SignedTimeClaims
        do {
            claims = try SignedToken.verify(answer.time, as: SignedTimeClaims.self, key: registration.serverKeys.key(for: answer.time))
        } catch {
            throw .invalidAnswer("the signed time does not verify: \(error.description)")
        }
        guard claims.nonce == nonce else { throw .invalidAnswer("the signed time is not the answer to this request") }
        let events = try await agent.store.change { (state, _) throws(AgentError) -> ([ClockEvent], [LicenseStore.RowChange]) in
            (state.clock.anchor(serverTime: claims.time, reading), [])
        }
        agent.report(events)
        return claims.time
    }
}
