import NIOCore
import NIOPosix
import SatchelSystem

extension ThreadPriority {
    /// Raises the thread of every loop of `group` (SwiftNIO's shared group by default: the servers' and clients'
    /// loops) `steps` nice levels above the process: on a machine busy with other work, a loop then still runs soon
    /// after its sockets wake it. Each loop's outcome, in order; where the process may not raise a priority, the loops
    /// are left as they were.
    package static func raiseLoops(_ group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, by steps: Int32) async -> [Outcome] {
        var outcomes: [Outcome] = []
        for loop in group.makeIterator() {
            let outcome = try? await loop.submit { raiseCurrentThread(by: steps) }.get()
            outcomes.append(outcome ?? .unsupported)
        }
        return outcomes
    }
}
