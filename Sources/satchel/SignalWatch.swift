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

    /// Returns at the first stop signal.
    static func interrupted() async {
        let (signals, continuation) = AsyncStream.makeStream(of: Int32.self)
        let watch = SignalWatch { continuation.yield($0) }
        for await _ in signals { break }
        watch.cancel()
    }

    /// Runs `child` to its end: a stop signal given to this process is passed on to the child's process group
    /// (SIGTERM; SIGKILL when it is still there 5 seconds later), so nothing it started outlives `satchel`. The
    /// child gets the terminal while it runs. Answers its status.
    static func run(_ child: ChildProcess) async -> Int32 {
        child.takeTerminal()
        let watch = SignalWatch { _ in
            child.signal(SIGTERM)
            DispatchQueue.global().asyncAfter(deadline: .now() + 5) { child.signal(SIGKILL) }
        }
        let status = await child.wait()
        child.returnTerminal()
        watch.cancel()
        child.signal(SIGTERM)  // anything of its group still running (a player's helper) goes with it
        return status
    }
}
