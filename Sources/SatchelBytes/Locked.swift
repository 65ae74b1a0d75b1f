import Foundation

/// A value behind a lock: the one way Satchel shares mutable state between threads outside an actor.
/// Keep the work inside ``withLock(_:)`` short and free of suspension points.
public final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// A box holding `value`.
    public init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    /// A copy of the value.
    public var current: Value { withLock { $0 } }
}
