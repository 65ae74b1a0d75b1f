import Foundation

/// The budget of failed operator logins (dashboard sign-ins and operator API keys): at most `perSource` failures
/// from one address and `perCredential` failures of one wrong key (from any address) within `window`; past either,
/// that address or that key is refused until its oldest failure leaves the window (429 with `Retry-After`).
/// There is no budget of all addresses together: a guessing attack from many addresses spends only its own
/// addresses' budgets and its own keys', so the operator's right key from an address that has not failed is
/// never refused. Pure: the caller gives the time. Memory is bounded: at most `tracked` addresses and keys are
/// kept (the stalest is forgotten first).
struct LoginThrottle: Sendable {
    var perSource = 10
    var perCredential = 10
    var window: TimeInterval = 60
    var tracked = 10_000
    private var sources = FailureLog()
    private var credentials = FailureLog()

    /// Seconds to wait before `address` may try `credential` (a digest of the key tried), or nil when it may try now.
    mutating func retryAfter(_ address: String, credential: [UInt8], at now: Date) -> Int? {
        let cutoff = now.addingTimeInterval(-window)
        var waits: [Date] = []
        if let oldest = sources.oldest(address, ifAtLeast: perSource, after: cutoff) { waits.append(oldest) }
        if let oldest = credentials.oldest(Self.name(credential), ifAtLeast: perCredential, after: cutoff) { waits.append(oldest) }
        guard let until = waits.max() else { return nil }
        return max(1, Int((until.addingTimeInterval(window).timeIntervalSince(now)).rounded(.up)))
    }

    /// Records a failed login from `address` with the wrong key whose digest is `credential`.
    mutating func failed(_ address: String, credential: [UInt8], at now: Date) {
        sources.record(address, at: now, cutoff: now.addingTimeInterval(-window), capacity: tracked)
        credentials.record(Self.name(credential), at: now, cutoff: now.addingTimeInterval(-window), capacity: tracked)
    }

    /// Failures recorded from `address` within the window.
    func count(_ address: String) -> Int { sources.count(address) }

    private static func name(_ credential: [UInt8]) -> String { Data(credential).base64EncodedString() }
}

/// Failure times by name, oldest first, for names seen within a window.
private struct FailureLog: Sendable {
    private var times: [String: [Date]] = [:]

    /// The oldest failure of `name` after `cutoff`, when it has at least `limit` of them.
    mutating func oldest(_ name: String, ifAtLeast limit: Int, after cutoff: Date) -> Date? {
        guard var mine = times[name] else { return nil }
        mine.removeAll { $0 <= cutoff }
        times[name] = mine.isEmpty ? nil : mine
        return mine.count >= limit ? mine.first : nil
    }

    mutating func record(_ name: String, at now: Date, cutoff: Date, capacity: Int) {
        if times[name] == nil, times.count >= capacity {
            times = times.filter { $0.value.last.map { $0 > cutoff } ?? false }  // names with no failure left go first
            if times.count >= capacity, let stalest = times.min(by: { ($0.value.last ?? .distantPast) < ($1.value.last ?? .distantPast) })?.key {
                times[stalest] = nil
            }
        }
        times[name, default: []].append(now)
    }

    func count(_ name: String) -> Int { times[name]?.count ?? 0 }
}
