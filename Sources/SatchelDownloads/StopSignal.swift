import SatchelBytes
import SatchelSystem

/// A one-shot signal many tasks may wait for: raised once, it stays raised. A waiter whose task is
/// cancelled stops waiting. Used to stop an attempt in progress and to learn that it has ended.
final class StopSignal: Sendable {
    private struct State {
        var raised = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Locked(State())

    /// True once ``raise()`` has been called.
    var isRaised: Bool { state.withLock { $0.raised } }

    /// Raises the signal, waking every waiter.
    func raise() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.raised = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the signal is raised or the calling task is cancelled.
    func wait() async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.raised || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume()
        }
    }
}
