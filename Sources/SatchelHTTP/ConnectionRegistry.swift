import Foundation
import NIOCore
import SatchelBytes
import SatchelSystem

/// Every open connection of one server and what it is doing, shared by all event loops (under a lock),
/// deciding at each new connection whether it is served, takes the place of a waiting one, may ask for
/// a health check only, or is refused. See ``ConnectionLimits``.
public final class ConnectionRegistry: Sendable {
    /// What a connection is doing.
    enum Activity: Sendable {
        /// Kept alive between requests, no byte of a new request yet.
        case idle
        /// Some bytes of a request head have arrived (or the connection is new), not the whole head.
        case readingHead
        /// A request's head has arrived and its body is being read.
        case readingBody
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
        let address: String
        /// Serving a long-lived stream: counted in ``ConnectionLimits/maxStreams``, not the cap.
        var stream = false
    }

    /// The limits in force.
    public let limits: ConnectionLimits
    private struct Table {
        var entries: [ObjectIdentifier: Entry] = [:]
        var regular = 0
        var reserved = 0
        var perAddress: [String: Int] = [:]
        var streams = 0
        /// Each tracked connection by its channel.
        var byChannel: [ObjectIdentifier: ObjectIdentifier] = [:]
        var evictions = 0
        var refusals = 0

        /// The regular connection to close to make room: among those without a request in progress, a slow head
        /// (one still not in after `slowAfter`) first, then an idle connection, then a head that is only new (a TLS
        /// handshake on a loaded host takes a while), each the longest-waiting of its kind. A request whose body is
        /// arriving is in progress: it is not closed, but its body has a deadline.
        func toClose(from address: String? = nil, now: NIODeadline, slowAfter: TimeAmount) -> ObjectIdentifier? {
            var best: (id: ObjectIdentifier, rank: Int, since: NIODeadline)?
            for (id, entry) in entries where !entry.reserve && !entry.stream && (address == nil || entry.address == address) {
                let rank: Int
                switch entry.activity {
                case .readingHead: rank = now - entry.since >= slowAfter ? 0 : 2
                case .idle: rank = 1
                case .readingBody, .busy: continue
                }
                if best.map({ (rank, entry.since) < ($0.rank, $0.since) }) ?? true { best = (id, rank, entry.since) }
            }
            return best?.id
        }

        /// Forgets `id`'s entry, counting it out of its pool and its address: the entry, or nil when it was gone.
        mutating func remove(_ id: ObjectIdentifier) -> Entry? {
            guard let entry = entries.removeValue(forKey: id) else { return nil }
            byChannel[ObjectIdentifier(entry.channel)] = nil
            if entry.stream {
                streams -= 1
            } else if entry.reserve {
                reserved -= 1
            } else {
                leaveCap(entry.address)
            }
            return entry
        }

        /// A regular connection of `address` leaves the cap (closed, or serving a stream now).
        mutating func leaveCap(_ address: String) {
            regular -= 1
            let left = (perAddress[address] ?? 1) - 1
            perAddress[address] = left > 0 ? left : nil
        }
    }

    private let table = Locked(Table())

    /// A registry for one server.
    public init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// Open connections (regular and reserve).
    public var openConnections: Int { table.withLock { $0.entries.count } }

    /// Open connections with a request in progress (its body arriving, or being handled).
    public var busyConnections: Int {
        table.withLock { $0.entries.values.filter { $0.activity == .busy || $0.activity == .readingBody }.count }
    }

    /// Each open connection's activity (for diagnostics and tests).
    public var activities: [String] {
        table.withLock { $0.entries.values.map { "\($0.activity)\($0.reserve ? " (reserve)" : "")" }.sorted() }
    }

    /// Connections closed to make room for new ones, and connections refused, since the start.
    public var counters: (evicted: Int, refused: Int) { table.withLock { ($0.evictions, $0.refusals) } }

    /// Admits a new connection from `address` (nil: the channel's peer); at the cap a connection without a request in
    /// progress is closed to make room (a slow head, else an idle one, else the oldest new head), and at the address's
    /// cap one of the address's own.
    func open(_ id: ObjectIdentifier, channel: any Channel, address: String? = nil, now: NIODeadline) -> Admission {
        var victims: [any Channel] = []
        let limits = limits
        let address = address ?? channel.remoteAddress?.ipAddress ?? "unknown"
        let slowAfter = Self.slowHead(limits)
        let admission: Admission = table.withLock { table in
            // An address at its cap makes room among its own connections, or gets the reserve (health checks) only.
            var regular = true
            if (table.perAddress[address] ?? 0) >= limits.maxConnectionsPerAddress {
                if let victim = table.toClose(from: address, now: now, slowAfter: slowAfter), let entry = table.remove(victim) {
                    victims.append(entry.channel)
                    table.evictions += 1
                } else {
                    regular = false
                }
            }
            if regular, table.regular >= limits.maxConnections, let victim = table.toClose(now: now, slowAfter: slowAfter),
               let entry = table.remove(victim) {
                victims.append(entry.channel)
                table.evictions += 1
            }
            if regular, table.regular < limits.maxConnections {
                table.regular += 1
                table.perAddress[address, default: 0] += 1
                table.entries[id] = Entry(activity: .readingHead, since: now, channel: channel, reserve: false, address: address)
                table.byChannel[ObjectIdentifier(channel)] = id
                return .accept
            }
            if table.reserved < limits.reserve {
                table.reserved += 1
                table.entries[id] = Entry(activity: .readingHead, since: now, channel: channel, reserve: true, address: address)
                table.byChannel[ObjectIdentifier(channel)] = id
                return .reserve
            }
            table.refusals += 1
            return .refuse
        }
        for victim in victims { victim.close(promise: nil) }
        return admission
    }

    /// How long a head may take before it counts as slow when room is made: a quarter of the header timeout.
    static func slowHead(_ limits: ConnectionLimits) -> TimeAmount {
        .nanoseconds(ConnectionWatch.timeAmount(limits.headerTimeout).nanoseconds / 4)
    }

    /// Long-lived streams open now.
    public var openStreams: Int { table.withLock { $0.streams } }

    /// Starts a long-lived stream on `channel` (the request's: an HTTP/1.1 connection, or an HTTP/2 stream): within
    /// ``ConnectionLimits/maxStreams``, the connection leaves the cap for the streams' budget (an HTTP/2 stream counts
    /// in it until it closes). False when the budget is spent: refuse the stream.
    public func beginStream(on channel: any Channel) -> Bool {
        let limits = limits
        let (started, detached) = table.withLock { table -> (Bool, Bool) in
            if let id = table.byChannel[ObjectIdentifier(channel)], let entry = table.entries[id] {
                if entry.stream { return (true, false) }
                guard !entry.reserve, table.streams < limits.maxStreams else { return (false, false) }
                table.leaveCap(entry.address)
                table.entries[id]?.stream = true
                table.streams += 1
                return (true, false)
            }
            guard table.streams < limits.maxStreams else { return (false, false) }
            table.streams += 1
            return (true, true)
        }
        if detached { channel.closeFuture.whenComplete { [table] _ in table.withLock { $0.streams -= 1 } } }
        return started
    }

    /// Records what a connection is doing now. A connection whose stream has ended is closed: it leaves the
    /// streams' budget at once (an idle one kept open would hold a place there until its idle timeout).
    func update(_ id: ObjectIdentifier, _ activity: Activity, now: NIODeadline) {
        let ended: (any Channel)? = table.withLock { table in
            if activity == .idle, table.entries[id]?.stream == true { return table.remove(id)?.channel }
            table.entries[id]?.activity = activity
            table.entries[id]?.since = now
            return nil
        }
        ended?.close(promise: nil)
    }

    /// Forgets a closed connection (one evicted earlier is already gone).
    func close(_ id: ObjectIdentifier) {
        table.withLock { table in _ = table.remove(id) }
    }
}
