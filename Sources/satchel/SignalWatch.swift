import Dispatch
import Foundation
import SatchelBytes
import SatchelSystem

/// Stop signals (SIGINT, SIGTERM, SIGHUP) caught for as long as the watch is held: each calls `handler` with its
/// number; `cancel` puts them back to their default action.
final class SignalWatch: Sendable {
    static let stopSignals = [SIGINT, SIGTERM, SIGHUP]
    private let sources: Locked<[any DispatchSourceSignal]>
    private let numbers: [Int32]

    init(_ numbers: [Int32] = SignalWatch.stopSignals, handler: @escaping @Sendable (Int32) -> Void) {
        self.numbers = numbers
        let queue = DispatchQueue(label: "satchel.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in numbers {
            signal(number, SIG_IGN)  // delivered to the source instead
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            source.resume()
            sources.append(source)
        }
        self.sources = Locked(sources)
    }

    func cancel() {
        for source in sources.withLock({ sources in defer { sources = [] }; return sources }) { source.cancel() }
        for number in numbers { signal(number, SIG_DFL) }
    }

    /// Catches stop signals from now on; the returned value's `next()` returns at the first. Made before a command
    /// tells anyone it is ready (prints its URL), so a stop signal sent the moment that is read is never the default
    /// action (the process killed before it records and cleans up).
    static func caught() -> StopSignals {
        StopSignals()
    }

    /// Runs `child` to its end: a stop signal given to this process is passed on to the child's process group
    /// (SIGTERM; SIGKILL when it is still there 5 seconds later), so nothing it started outlives `satchel`. The
    /// child gets the terminal while it runs. Answers its status.
    static func run(_ child: ChildProcess) async -> Int32 {
        child.takeTerminal()
        let watch = SignalWatch { _ in
            child.signal(SIGTERM)
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { child.signal(SIGKILL) }  // blocking-ok: a timer, nothing waits on the pool
        }
        let status = await child.wait()
        child.returnTerminal()
        watch.cancel()
        child.signal(SIGTERM)  // anything of its group still running (a player's helper) goes with it
        return status
    }
}

/// Stop signals caught from the moment this is made until the first one arrives.
final class StopSignals: Sendable {
    private let watch: SignalWatch
    private let signals: AsyncStream<Int32>

    fileprivate init() {
        let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.signals = signals
        watch = SignalWatch { continuation.yield($0) }
    }

    /// Returns at the first stop signal (at once if one came already) and puts the signals back to their default action.
    func next() async {
        for await _ in signals { break }
        watch.cancel()
    }

    /// Puts the signals back to their default action without waiting for one.
    func release() {
        watch.cancel()
    }
}
