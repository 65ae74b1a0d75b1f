import Foundation
import NIOCore
import NIOPosix
import SatchelBytes
import SatchelHTTP
import SatchelSystem
import Testing

/// Issue 48: a loop waiting its turn for a CPU behind other work answers late however little it has to do; raised
/// above the process, the kernel runs it sooner and gives it a larger share.
@Suite("Event loops above the process")
struct LoopPriorityTests {
    /// Raising a priority needs root or CAP_SYS_NICE (the CLI test runs the server without it).
    static let mayRaise = getuid() == 0

    /// A group of `threads` loops, raised 10 levels, with the process's level and the loops' outcomes.
    static func raisedGroup(_ threads: Int) async throws -> (MultiThreadedEventLoopGroup, base: Int32, [ThreadPriority.Outcome]) {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let base = try #require(ThreadPriority.processNice)
        return (group, base, await ThreadPriority.raiseLoops(group, by: 10))
    }

    @Test("each loop's thread runs 10 nice levels above the process; the process's other threads do not move",
          .enabled(if: mayRaise))
    func raised() async throws {
        #if os(Linux)
        let (group, base, outcomes) = try await Self.raisedGroup(2)
        #expect(outcomes == [.raised(nice: max(-20, base - 10)), .raised(nice: max(-20, base - 10))], "\(outcomes)")
        for loop in group.makeIterator() {
            let nice = try await loop.submit { ThreadPriority.currentNice }.get()
            #expect(nice == max(-20, base - 10))
        }
        #expect(await OwnThread.run { ThreadPriority.currentNice } == base, "a thread elsewhere is left at the process's level")
        try await group.shutdownGracefully()
        #endif
    }

    @Test("a thread a raised loop makes inherits the loop's level, and lowerToProcess takes it back to the process's (what OwnThread's threads do first)",
          .enabled(if: mayRaise))
    func madeThreadLowered() async throws {
        #if os(Linux)
        let (group, base, _) = try await Self.raisedGroup(1)
        let levels = Locked<(inherited: Int32?, lowered: Int32?)>((nil, nil))
        let done = DispatchSemaphore(value: 0)
        try await group.next().submit {
            Thread {
                let inherited = ThreadPriority.currentNice
                ThreadPriority.lowerToProcess()
                levels.withLock { $0 = (inherited, ThreadPriority.currentNice) }
                done.signal()
            }.start()
        }.get()
        await OwnThread.run { done.wait() }  // blocking-ok: a thread of its own waits for the one the loop made
        #expect(levels.current.inherited == max(-20, base - 10), "Linux: a new thread starts at its creator's level")
        #expect(levels.current.lowered == base)
        try await group.shutdownGracefully()
        #endif
    }
}
