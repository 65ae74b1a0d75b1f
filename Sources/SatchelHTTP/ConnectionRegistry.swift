import Foundation
import NIOCore

/// Every open connection of one server and what it is doing, shared by all event loops (under a lock),
/// deciding at each new connection whether it is served, takes the place of a waiting one, may ask for
/// a health check only, or is refused. See ``ConnectionLimits``.
public final class ConnectionRegistry: @unchecked Sendable {
    /// What a connection is doing.
    enum Activity: Sendable {
        /// Kept alive between requests, no byte of a new request yet.
        case idle
        /// Some bytes of a request head have arrived (or the connection is new), not the whole head.
        case readingHead
        /// A request is being handled.
        case busy
    }

    /// What to do with a new connection.
    enum Admission: Equatable {
        /// Serve it.
        case accept
        /// Serve it, on one of the reserve connections: only ``ConnectionLimits/alwaysServed`` paths.
        case reserve
        /// Refuse it (503) and close.
        case refuse
    }

    private struct Entry {
        var activity: Activity
        var since: NIODeadline
        let channel: any Channel
        let reserve: Bool
    }

    /// The limits in force.
    public let limits: ConnectionLimits
    private let lock = NSLock()
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var regular = 0
    private var reserved = 0
    private var evictions = 0
    private var refusals = 0

    /// A registry for one server.
    public init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Open connections (regular and reserve).
    public var openConnections: Int { lock.withLock { entries.count } }

    /// Open connections with a request in progress.
    public var busyConnections: Int { lock.withLock { entries.values.filter { $0.activity == .busy }.count } }

    /// Each open connection's activity (for diagnostics and tests).
    public var activities: [String] { lock.withLock { entries.values.map { "\($0.activity)\($0.reserve ? " (reserve)" : "")" }.sorted() } }

    /// Connections closed to make room for new ones, and connections refused, since the start.
    public var counters: (evicted: Int, refused: Int) { lock.withLock { (evictions, refusals) } }

    /// Admits a new connection; at the cap the longest-waiting connection without a request in progress
    /// (one reading a head, or idle) is closed to make room.
    func open(_ id: ObjectIdentifier, channel: any Channel, now: NIODeadline) -> Admission {
        var victim: (any Channel)?
        let admission: Admission = lock.withLock {
            if regular >= limits.maxConnections, let oldest = oldestWaiting() {
                victim = entries.removeValue(forKey: oldest)?.channel
                regular -= 1
                evictions += 1
            }
            if regular < limits.maxConnections {
                regular += 1
                entries[id] = Entry(activity: .readingHead, since: now, channel: channel, reserve: false)
                return .accept
            }
            if reserved < limits.reserve {
                reserved += 1
                entries[id] = Entry(activity: .readingHead, since: now, channel: channel, reserve: true)
                return .reserve
            }
            refusals += 1
            return .refuse
        }
        victim?.close(promise: nil)
        return admission
    }

    /// Records what a connection is doing now.
    func update(_ id: ObjectIdentifier, _ activity: Activity, now: NIODeadline) {
        lock.withLock {
            entries[id]?.activity = activity
            entries[id]?.since = now
        }
    }

    /// Forgets a closed connection (one evicted earlier is already gone).
    func close(_ id: ObjectIdentifier) {
        lock.withLock {
            guard let entry = entries.removeValue(forKey: id) else { return }
            if entry.reserve { reserved -= 1 } else { regular -= 1 }
        }
    }

    /// The regular connection that has waited longest without a request in progress (slow heads first).
    private func oldestWaiting() -> ObjectIdentifier? {
        var best: (id: ObjectIdentifier, rank: Int, since: NIODeadline)?
        for (id, entry) in entries where !entry.reserve && entry.activity != .busy {
            let rank = entry.activity == .readingHead ? 0 : 1
            if best.map({ (rank, entry.since) < ($0.rank, $0.since) }) ?? true { best = (id, rank, entry.since) }
        }
        return best?.id
    }
}
