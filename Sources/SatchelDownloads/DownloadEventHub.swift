import Foundation
import SatchelBytes
import SatchelSystem

/// Hands every engine event to every subscriber. Subscribing, emitting and unsubscribing are plain calls
/// under a lock (no task is started for any of them); a slow subscriber keeps the newest 4,096 events.
package final class DownloadEventHub: Sendable {
    private let subscribers = Locked<[UUID: AsyncStream<DownloadEvent>.Continuation]?>([:])

    /// A hub with no subscribers.
    package init() {}

    /// A stream of every event from now on; it ends when the hub finishes.
    package func events() -> AsyncStream<DownloadEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: DownloadEvent.self, bufferingPolicy: .bufferingNewest(4096))
        let key = SecureRandom.uuid()
        let added = subscribers.withLock { table -> Bool in
            guard table != nil else { return false }
            table?[key] = continuation
            return true
        }
        guard added else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0?.removeValue(forKey: key) }
        }
        return stream
    }

    /// Sends `event` to every subscriber.
    package func emit(_ event: DownloadEvent) {
        for continuation in subscribers.withLock({ Array(($0 ?? [:]).values) }) { continuation.yield(event) }
    }

    /// Ends every stream; later subscribers get an ended stream.
    package func finish() {
        let all = subscribers.withLock { table -> [AsyncStream<DownloadEvent>.Continuation] in
            defer { table = nil }
            return Array((table ?? [:]).values)
        }
        for continuation in all { continuation.finish() }
    }
}
