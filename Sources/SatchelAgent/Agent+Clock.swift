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
        return try await observe(reading, in: snapshot).now(reading)
    }

    /// The secure clock of `snapshot` after `reading` (a rollback is reported once), stored again when its trust
    /// changed or its mark moved on by a minute.
    func observe(_ reading: ClockReading, in snapshot: LicenseStore.Snapshot) async throws(AgentError) -> SecureClock {
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
        return clock
    }

    // MARK: Playback

    /// A value that moves with every change to the store — this agent's (licenses, uses, releases, the clock's trust)
    /// or another process's on the same data directory: read without waiting.
    public nonisolated var changeCount: UInt64 { store.changeStamp }

    /// The device's clocks now.
    public nonisolated func readClock() -> ClockReading { clockReader.read() }

    /// The rights of `asset`'s newest license that the store vouches for, with the secure clock, for a playback
    /// session to evaluate in memory before every segment.
    public func grant(asset: String) async throws(AgentError) -> PlaybackGrant {
        let snapshot = try await store.snapshot()
        let clock = try await observe(clockReader.read(), in: snapshot)
        guard let license = newest(asset, in: snapshot) else {
            return PlaybackGrant(rights: nil, usage: RightsUsage(acquired: .distantPast), clock: clock)
        }
        return PlaybackGrant(rights: license.rights, usage: license.usage, clock: clock)
    }

    /// Keeps the secure clock as a session's `reading` moved it (the same reading gives the store's clock the same
    /// result: a rollback is recorded and reported once; the mark is stored at most once a minute).
    public func keepClock(_ reading: ClockReading) async {
        guard let snapshot = try? await store.snapshot() else { return }
        _ = try? await observe(reading, in: snapshot)
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
