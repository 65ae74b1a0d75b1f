import Foundation
import SatchelBytes

/// Devices' sync times on their way to the database. A sync notes its device's time here and is answered; what was
/// noted is written together soon after (``SyncTimeWriter`` writes every ``interval``, statements of up to ``batch``
/// devices spread over it), so the syncs of a million devices do not each queue for a write of their own on the database's
/// writer (SQLite's one, PostgreSQL's commits). A device read in between shows the time noted. A time written never
/// goes back: a later one is kept, whichever write comes last.
final class SyncTimes: Sendable {
    /// How long a time noted waits for the others of its write.
    static let interval: Duration = .milliseconds(250)
    /// Devices one statement of the writes along the way names at most.
    static let batch = 25
    /// Devices one statement of a flush names at most.
    static let flushBatch = 500

    /// The pause between the statements of one write of `statements`: they spread over most of the interval, at
    /// least 1 ms apart (a write longer than the interval delays the next) and at most 10 ms.
    static func pause(statements: Int) -> Duration {
        guard statements > 1 else { return .zero }
        return min(.milliseconds(10), max(.milliseconds(1), interval * 0.8 / Double(statements - 1)))
    }
    /// Times held at most: past it a sync's time is dropped (the database has been unreachable for long), rather
    /// than memory growing without bound. The device's next sync notes it again.
    static let maximumPending = 1_000_000

    private struct State {
        var pending: [String: Date] = [:]
        /// Taken by the write under way, not yet in the database.
        var writing: [String: Date] = [:]
        /// A write is scheduled or under way.
        var scheduled = false
    }

    private let state = Locked(State())
    private let limit: Int

    /// Times for at most `limit` devices held.
    init(limit: Int = maximumPending) {
        self.limit = limit
    }

    /// Notes `device`'s sync at `time`; true when the caller is to schedule the write (none is scheduled).
    func note(_ device: String, at time: Date) -> Bool {
        state.withLock { state in
            if let known = state.pending[device], known >= time { return false }
            guard state.pending[device] != nil || state.pending.count + state.writing.count < limit else { return false }
            state.pending[device] = time
            defer { state.scheduled = true }
            return !state.scheduled
        }
    }

    /// The time noted for `device` and not yet written, if any.
    func unwritten(_ device: String) -> Date? {
        state.withLock { state in
            switch (state.pending[device], state.writing[device]) {
            case let (pending?, writing?): max(pending, writing)
            case let (pending, writing): pending ?? writing
            }
        }
    }

    /// The times noted so far, for a write (they stay visible to ``unwritten(_:)`` until ``finished(_:succeeded:)``).
    func take() -> [String: Date] {
        state.withLock { state in
            state.writing.merge(state.pending) { max($0, $1) }
            state.pending = [:]
            return state.writing
        }
    }

    /// Ends a write: when it succeeded its times leave; when it failed they wait for the next.
    func finished(_ times: [String: Date], succeeded: Bool) {
        state.withLock { state in
            for (device, time) in times where state.writing[device] == time {
                state.writing[device] = nil
                if !succeeded, state.pending[device].map({ $0 < time }) ?? true { state.pending[device] = time }
            }
        }
    }

    /// Whether the scheduled writer writes again (more were noted meanwhile); when not, or when `stopping` (its write
    /// failed), no write is scheduled any more and the next sync schedules one.
    func continues(stopping: Bool = false) -> Bool {
        state.withLock { state in
            state.scheduled = !stopping && !state.pending.isEmpty
            return state.scheduled
        }
    }
}
