import Foundation

/// Each device's budget of events (a token bucket per device, in events and in bytes): `burst` events and
/// `burstBytes` bytes at once, refilled at `perHour` events and `bytesPerHour` bytes an hour. A batch over what is
/// left is refused whole (the device keeps it in its outbox and sends it again after the wait), so one device
/// cannot grow the history faster than the budget whatever it sends. Pure: the caller gives the time. Memory is
/// bounded: at most `devices` devices are tracked (one whose bucket is full again is forgotten first; a forgotten
/// device starts full).
public struct EventQuota: Sendable {
    /// Events a device may send at once.
    public var burst = 5_000
    /// Events a device may send an hour, sustained.
    public var perHour = 5_000
    /// Bytes of events a device may send at once.
    public var burstBytes = 5 << 20
    /// Bytes of events a device may send an hour, sustained.
    public var bytesPerHour = 5 << 20
    /// Devices tracked at most.
    public var devices = 100_000
    private var buckets: [String: Bucket] = [:]

    private struct Bucket: Sendable {
        var events: Double
        var bytes: Double
        var updated: Date
    }

    /// A quota with the default budget.
    public init() {}

    /// A quota of `eventsPerHour` events an hour and at once, and a kilobyte an event of bytes.
    public init(eventsPerHour: Int) {
        burst = max(eventsPerHour, 1)
        perHour = burst
        burstBytes = burst << 10
        bytesPerHour = burstBytes
    }

    /// Takes `events` events of `bytes` bytes from `device`'s budget at `now`: nil when taken, else the seconds to
    /// wait before the batch fits.
    public mutating func take(device: String, events: Int, bytes: Int, at now: Date) -> Int? {
        var bucket = refilled(buckets[device], at: now)
        let missingEvents = Double(events) - bucket.events, missingBytes = Double(bytes) - bucket.bytes
        if missingEvents > 0 || missingBytes > 0 {
            if events > burst || bytes > burstBytes { return 3600 }  // never fits: the device must send smaller batches
            let wait = max(missingEvents / Double(perHour), missingBytes / Double(bytesPerHour)) * 3600
            buckets[device] = bucket
            return max(1, Int(wait.rounded(.up)))
        }
        bucket.events -= Double(events)
        bucket.bytes -= Double(bytes)
        if buckets[device] == nil, buckets.count >= devices { forgetFull(at: now) }
        buckets[device] = bucket
        return nil
    }

    private func refilled(_ bucket: Bucket?, at now: Date) -> Bucket {
        guard let bucket else { return Bucket(events: Double(burst), bytes: Double(burstBytes), updated: now) }
        let hours = max(0, now.timeIntervalSince(bucket.updated)) / 3600
        return Bucket(events: min(Double(burst), bucket.events + hours * Double(perHour)),
                      bytes: min(Double(burstBytes), bucket.bytes + hours * Double(bytesPerHour)), updated: now)
    }

    private mutating func forgetFull(at now: Date) {
        buckets = buckets.filter { _, bucket in
            let full = refilled(bucket, at: now)
            return full.events < Double(burst) || full.bytes < Double(burstBytes)
        }
        if buckets.count >= devices, let stalest = buckets.min(by: { $0.value.updated < $1.value.updated })?.key { buckets[stalest] = nil }
    }
}

extension EventRules {
    /// How far ahead of the server's receipt a device's time for an event may lie; later times are kept as this.
    public static let futureSkew: TimeInterval = 300
    /// How far before the server's receipt a device's time may lie (an outbox kept offline for months); earlier
    /// times are kept as this.
    public static let pastLimit: TimeInterval = 366 * 86_400

    /// The device's time for an event received at `received`, clamped to the window a real device's clock and
    /// outbox allow: an event dated in the far future (or past) neither sorts first nor lands outside the history's
    /// partitions.
    public static func storedTime(_ time: Date, received: Date) -> Date {
        min(max(time, received.addingTimeInterval(-pastLimit)), received.addingTimeInterval(futureSkew))
    }
}
