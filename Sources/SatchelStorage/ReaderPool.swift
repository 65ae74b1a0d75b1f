import FluentKit
import SatchelBytes

/// A store's read-only handles, taken in turn: on SQLite each is a connection of its own, so reads run side by side
/// (one connection runs one statement at a time, and callers queue behind it).
public final class ReaderPool: Sendable {
    /// The handles, in the order they are taken.
    public let handles: [any Database]
    private let turn = Locked(0)

    /// A pool of `handles` (at least one).
    init(_ handles: [any Database]) {
        precondition(!handles.isEmpty, "a reader pool needs a handle")
        self.handles = handles
    }

    /// The next handle in turn.
    public func next() -> any Database {
        guard handles.count > 1 else { return handles[0] }
        return handles[turn.withLock { turn in
            defer { turn = (turn + 1) % handles.count }
            return turn
        }]
    }
}
