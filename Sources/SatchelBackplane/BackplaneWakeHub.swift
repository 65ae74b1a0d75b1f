import Foundation
import SatchelBytes

/// Wakes the device streams of this node when something for them changed: a command issued to a device, or the
/// settings every device takes. The store's node wakes its own streams at once; other nodes are woken by
/// ``PostgresWakeListener`` (PostgreSQL `NOTIFY` sent in the transaction that made the change). A wake carries no
/// data: the woken stream reads the store, so a wake lost or repeated changes nothing but latency.
public final class BackplaneWakeHub: Sendable {
    /// What changed.
    public enum Wake: Sendable, Equatable {
        /// The device's commands.
        case commands
        /// The settings.
        case settings
    }

    private struct Subscriber: Sendable {
        let device: String
        let continuation: AsyncStream<Wake>.Continuation
    }

    private let subscribers = Locked<[UUID: Subscriber]>([:])

    /// A hub with no subscribers.
    public init() {}

    /// The wakes for `device` until `cancel` is called (or the stream is dropped); at most a few are held (a wake
    /// means "read the store", so more in a row add nothing).
    public func subscribe(device: String) -> (wakes: AsyncStream<Wake>, cancel: @Sendable () -> Void) {
        let id = UUID()
        let (stream, continuation) = AsyncStream<Wake>.makeStream(bufferingPolicy: .bufferingNewest(4))
        subscribers.withLock { $0[id] = Subscriber(device: device, continuation: continuation) }
        let cancel: @Sendable () -> Void = { [subscribers] in
            let removed = subscribers.withLock { $0.removeValue(forKey: id) }
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

    /// Wakes every stream with the settings.
    public func wakeAll() {
        for subscriber in subscribers.withLock({ Array($0.values) }) { subscriber.continuation.yield(.settings) }
    }

    /// Streams open on this node.
    public var count: Int { subscribers.withLock { $0.count } }

    /// The channel the store notifies on PostgreSQL, and the payloads: `device:ID` or `settings`.
    public static let channel = "satchel_backplane"

    /// Acts on a notification's payload.
    public func wake(payload: String) {
        if payload == "settings" {
            wakeAll()
        } else if payload.hasPrefix("device:") {
            wake(device: String(payload.dropFirst("device:".count)))
        }
    }
}
