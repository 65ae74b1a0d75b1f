import Foundation

/// The budget of failed dashboard logins: at most `perAddress` failures from one address and `overall` from all
/// addresses together within `window`; past either, logins are refused until the oldest failure leaves the
/// window (429 with `Retry-After`), whatever key they carry. Guessing then costs the same whatever the number of
/// connections. Pure: the caller gives the time. Memory is bounded: at most `addresses` addresses are tracked
/// (the stalest is forgotten first).
struct LoginThrottle: Sendable {
    var perAddress = 10
    var overall = 100
    var window: TimeInterval = 60
    var addresses = 10_000
    private var failures: [String: [Date]] = [:]
    private var all: [Date] = []

    /// Seconds to wait before `address` may try again, or nil when it may try now.
    mutating func retryAfter(_ address: String, at now: Date) -> Int? {
        forget(before: now.addingTimeInterval(-window))
        var waits: [Date] = []
        if all.count >= overall, let oldest = all.first { waits.append(oldest) }
        if let mine = failures[address], mine.count >= perAddress, let oldest = mine.first { waits.append(oldest) }
        guard let until = waits.max() else { return nil }
        return max(1, Int((until.addingTimeInterval(window).timeIntervalSince(now)).rounded(.up)))
    }

    /// Records a failed login from `address`.
    mutating func failed(_ address: String, at now: Date) {
        if failures[address] == nil, failures.count >= addresses,
           let stalest = failures.min(by: { ($0.value.last ?? .distantPast) < ($1.value.last ?? .distantPast) })?.key {
            failures[stalest] = nil
        }
        failures[address, default: []].append(now)
        all.append(now)
    }

    /// Failures recorded from `address` within the window.
    func count(_ address: String) -> Int { failures[address]?.count ?? 0 }

    private mutating func forget(before cutoff: Date) {
        all.removeAll { $0 <= cutoff }
        for (address, times) in failures {
            let kept = times.filter { $0 > cutoff }
            failures[address] = kept.isEmpty ? nil : kept
        }
    }
}
