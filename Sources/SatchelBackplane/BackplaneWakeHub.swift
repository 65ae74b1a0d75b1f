import Foundation
import SatchelBytes

/// Wakes the device streams of this node when something for them changed: a command issued to a device, the
/// settings every device takes, a device's subscriptions, or an item added to a feed a device follows. The store's node wakes its own streams at once; other nodes are woken by
/// `PostgresWakeListener` (PostgreSQL `NOTIFY` sent in the transaction that made the change). A wake carries no
/// data: the woken stream reads the store, so a wake lost or repeated changes nothing but latency.
public final class BackplaneWakeHub: Sendable {
    /// What changed.
    public enum Wake: Sendable, Equatable {
        /// The device's commands.
        case commands
        /// The settings.
        case settings
        /// The device's subscriptions changed (its stream reads them again and ``follow(device:feeds:)``s them).
        case subscriptions
        /// An item was added to this feed, which the device follows.
        case feed(String)
    }

    private struct Subscriber: Sendable {
        let device: String
        let continuation: AsyncStream<Wake>.Continuation
    }

    private let subscribers = Locked<[UUID: Subscriber]>([:])
    /// The feeds each device with a stream here follows.
    private let following = Locked<[String: Set<String>]>([:])

    /// A hub with no subscribers.
    public init() {}

    /// The wakes for `device` until `cancel` is called (or the stream is dropped); at most a few are held (a wake
    /// means "read the store", so more in a row add nothing). `exclusive` ends the device's other subscriptions here
    /// (a device's event stream: its newer one replaces its older).
    public func subscribe(device: String, exclusive: Bool = false) -> (wakes: AsyncStream<Wake>, cancel: @Sendable () -> Void) {
        let id = SecureRandom.uuid()
        let (stream, continuation) = AsyncStream<Wake>.makeStream(bufferingPolicy: .bufferingNewest(4))
        let superseded = subscribers.withLock { all -> [Subscriber] in
            var ended: [Subscriber] = []
            if exclusive {
                for (other, subscriber) in all where subscriber.device == device { ended.append(all.removeValue(forKey: other) ?? subscriber) }
            }
            all[id] = Subscriber(device: device, continuation: continuation)
            return ended
        }
        for subscriber in superseded { subscriber.continuation.finish() }  // its stream ends: one a device at a time
        let cancel: @Sendable () -> Void = { [subscribers, following] in
            let (removed, last) = subscribers.withLock { all in
                let removed = all.removeValue(forKey: id)
                return (removed, !all.values.contains { $0.device == device })
            }
            if last { following.withLock { _ = $0.removeValue(forKey: device) } }
            removed?.continuation.finish()
        }
        continuation.onTermination = { _ in cancel() }
        return (stream, cancel)
    }

    /// Wakes the streams of `device`.
    public func wake(device: String) {
        for subscriber in subscribers.withLock({ Array($0.values) }) where subscriber.device == device {
            subscriber.continuation.yield(.commands)
        }
    }

    /// Says which feeds `device` follows (its stream, having read its subscriptions): an item added to one of them
    /// wakes its streams.
    public func follow(device: String, feeds: Set<String>) {
        guard subscribers.withLock({ $0.values.contains { $0.device == device } }) else { return }
        following.withLock { $0[device] = feeds }
    }

    /// Wakes the streams of the devices that follow `feed`.
    public func wake(feed: String) {
        let devices = following.withLock { $0.filter { $0.value.contains(feed) }.map(\.key) }
        guard !devices.isEmpty else { return }
        let wanted = Set(devices)
        for subscriber in subscribers.withLock({ Array($0.values) }) where wanted.contains(subscriber.device) {
            subscriber.continuation.yield(.feed(feed))
        }
    }

    /// Wakes the streams of `device` to read its subscriptions again.
    public func wake(subscriptionsOf device: String) {
        for subscriber in subscribers.withLock({ Array($0.values) }) where subscriber.device == device {
            subscriber.continuation.yield(.subscriptions)
        }
    }

    /// Wakes every stream with the settings.
    public func wakeAll() {
        for subscriber in subscribers.withLock({ Array($0.values) }) { subscriber.continuation.yield(.settings) }
    }

    /// Streams open on this node.
    public var count: Int { subscribers.withLock { $0.count } }

    /// The channel the store notifies on PostgreSQL, and the payloads: `device:ID`, `settings`, `subscriptions:ID`
    /// or `feed:ID`.
    public static let channel = "satchel_backplane"

    /// Acts on a notification's payload.
    public func wake(payload: String) {
        if payload == "settings" {
            wakeAll()
        } else if payload.hasPrefix("device:") {
            wake(device: String(payload.dropFirst("device:".count)))
        } else if payload.hasPrefix("subscriptions:") {
            wake(subscriptionsOf: String(payload.dropFirst("subscriptions:".count)))
        } else if payload.hasPrefix("feed:") {
            wake(feed: String(payload.dropFirst("feed:".count)))
        }
    }
}
