import Foundation
import SatchelBytes
import Logging

/// The log subscription ("untethered logging"): every record the process logs at or above the
/// configured level, delivered to each subscriber's `AsyncStream`. A subscriber that falls behind loses its
/// oldest records (at most ``bufferSize`` wait), never slows the logger down.
public final class LogHub: Sendable {
    /// Records kept for a subscriber that has not read them yet.
    public static let bufferSize = 1_000
    /// The hub `SatchelLogHandler` publishes to.
    public static let shared = LogHub()

    private let subscribers = Locked<[UInt64: AsyncStream<LogRecord>.Continuation]>([:])
    private let nextID = Locked<UInt64>(0)

    /// A new hub (tests; applications use ``shared``).
    public init() {}

    /// Every record from now on, until the stream is dropped.
    public func records() -> AsyncStream<LogRecord> {
        let id = nextID.withLock { value -> UInt64 in
            value += 1
            return value
        }
        let (stream, continuation) = AsyncStream<LogRecord>.makeStream(bufferingPolicy: .bufferingNewest(Self.bufferSize))
        continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: id) } }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    /// True when someone listens (nothing is built for nobody).
    public var hasSubscribers: Bool { !subscribers.current.isEmpty }

    /// Delivers `record` to every subscriber.
    public func publish(_ record: LogRecord) {
        for continuation in subscribers.current.values { continuation.yield(record) }
    }
}
