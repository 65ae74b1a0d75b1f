import Foundation

/// Byte buffers passed from a producer to background writers and back, at most `count` out at once: the
/// producer fills memory that is already paged in instead of fresh memory the kernel must zero, and waits
/// when every buffer is still being written, so the bytes in flight stay bounded. A buffer that is never
/// given back (its producer failed) is simply gone; the pool may be dropped with buffers out.
public final class BufferPool: @unchecked Sendable {  // every member is read and written under `condition`
    private let condition = NSCondition()
    private let limit: Int
    private var out = 0
    private var buffers: [[UInt8]] = []

    /// A pool of `count` buffers (at least 1), allocated as they are first taken.
    public init(count: Int) {
        limit = max(count, 1)
    }

    /// A buffer as it was given back, its bytes of the last use still in it (empty when new): a producer that
    /// overwrites it in place (or empties it, keeping its capacity) reuses its memory. Waits while every buffer is out.
    public func take() -> [UInt8] {
        condition.lock()
        defer { condition.unlock() }
        while out >= limit { condition.wait() }
        out += 1
        return buffers.popLast() ?? []
    }

    /// Returns a buffer taken with ``take()``. Give the last reference to it, or its next user's writes copy it.
    public func give(_ buffer: consuming [UInt8]) {
        condition.lock()
        defer { condition.unlock() }
        buffers.append(buffer)
        out = max(out - 1, 0)
        condition.signal()
    }
}
