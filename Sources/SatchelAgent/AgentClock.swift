import Foundation
import NIOCore
import SatchelBytes
import SatchelRights

/// The agent's secure clock: read against the stored clock (a rollback reported once), kept on a change of trust and
/// at most once a minute, and the server's time for dating requests and anchoring the clock. Runs on the agent's
/// isolation. It holds when the server's time may next be asked for after a failed attempt.
final class AgentClock {
    private let store: LicenseStore
    private let reader: any ClockReader
    private let device: AgentDevice
    private let transport: AgentTransport
    private let serverKeys: AgentServerKeys
    private let reporter: AgentReporter
    /// After a failed attempt to restore the clock's trust: the boot-clock time before which none is made, and the
    /// back-off that set it.
    private(set) var trustRetry: (after: TimeInterval, backOff: TimeInterval)?

    init(store: LicenseStore, reader: any ClockReader, device: AgentDevice, transport: AgentTransport, serverKeys: AgentServerKeys,
         reporter: AgentReporter) {
        self.store = store
        self.reader = reader
        self.device = device
        self.transport = transport
        self.serverKeys = serverKeys
        self.reporter = reporter
    }

    /// How far the secure clock's high-water mark may run ahead of what is stored before it is stored again: the
    /// clock is kept on a change of trust and at most once a minute otherwise (never per segment served). Nothing
    /// is lost meanwhile: the stored mark is advanced by the boot clock when it is read.
    static let persistInterval: TimeInterval = 60

    /// Reads the clocks against the stored secure clock (a rollback is reported once) and answers the trusted
    /// time; the clock is stored again when its trust changed or its mark moved on by a minute.
    nonisolated(nonsending) func trustedNow(_ snapshot: LicenseStore.Snapshot) async throws(AgentError) -> Date? {
        let reading = reader.read()
        let clock = try await observe(reading, in: snapshot)
        guard !clock.trusted, await restoreTrust() else { return clock.now(reading) }
        let again = reader.read()
        return try await observe(again, in: try await store.snapshot()).now(again)
    }

    /// The first back-off after a failed attempt to restore trust, and the longest.
    static let trustBackOff: ClosedRange<TimeInterval> = 15...600

    /// With the clock untrusted, asks the license server for its signed time (the agent contacts a
    /// trusted date automatically when it is used): one attempt with a short timeout; after a failure, none again
    /// until a back-off (15 s doubling to 10 min, by the boot clock) has passed. Answers whether the server's time came.
    nonisolated(nonsending) func restoreTrust() async -> Bool {
        guard let server = device.registration?.server else { return false }
        let boot = reader.read().boot
        if let retry = trustRetry, boot < retry.after { return false }
        do {
            try await fetchTime(server: server, timeout: .seconds(2))
            trustRetry = nil
            return true
        } catch {
            let backOff = trustRetry.map { min($0.backOff * 2, Self.trustBackOff.upperBound) } ?? Self.trustBackOff.lowerBound
            trustRetry = (boot + backOff, backOff)
            reporter.logger.info("the device clock stays untrusted: the license server's time could not be fetched (tried again in \(Int(backOff)) s): \(error)")
            return false
        }
    }

    /// The secure clock of `snapshot` after `reading` (a rollback is reported once), stored again when its trust
    /// changed or its mark moved on by a minute.
    nonisolated(nonsending) func observe(_ reading: ClockReading, in snapshot: LicenseStore.Snapshot) async throws(AgentError) -> SecureClock {
        var clock = snapshot.state.clock
        let events = clock.observe(reading)
        let stale = (clock.highWater ?? .distantPast).timeIntervalSince(snapshot.state.clock.highWater ?? .distantPast) >= Self.persistInterval
        if !events.isEmpty || stale {
            try await store.change { (state, _) throws(AgentError) -> (Void, [LicenseStore.RowChange]) in
                _ = state.clock.observe(reading)
                return ((), [])
            }
        }
        reporter.report(events)
        return clock
    }

    /// The time a request is dated with: the server's own time as the secure clock estimates it (its last signed
    /// time advanced by the boot clock), asking the server for its signed time first when there is none in this
    /// boot; else the later of the clock's floor and the wall clock.
    nonisolated(nonsending) func requestTime(server: String) async throws(AgentError) -> Date {
        let snapshot = try? await store.snapshot()
        let reading = reader.read()
        if let estimate = snapshot?.state.clock.serverNow(reading) { return estimate }
        if let fetched = try? await fetchTime(server: server) {
            return fetched.addingTimeInterval(max(0, reader.read().boot - reading.boot))
        }
        let clock = snapshot?.state.clock ?? SecureClock()
        return clock.now(reading) ?? max(clock.floor(reading) ?? reading.wall, reading.wall)
    }

    /// The server's signed time, anchoring the secure clock.
    @discardableResult
    nonisolated(nonsending) func fetchTime(server: String, timeout: TimeAmount = .seconds(10)) async throws(AgentError) -> Date {
        let nonce = Hex.encode(SecureRandom.bytes(16))
        let client = try LicenseServerClient(server: server, timeout: timeout, http: transport.client)
        let answer = try Agent.decode(TimeAnswer.self, try await client.get("/time?nonce=\(nonce)"), what: "the time")
        try await serverKeys.learn(kid: try? SignedToken.keyID(answer.time))
        let registration = try device.registered()
        let reading = reader.read()
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
        reporter.report(events)
        return claims.time
    }
}
