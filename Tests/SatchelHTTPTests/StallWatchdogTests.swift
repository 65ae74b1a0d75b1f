import Foundation
import NIOCore
import NIOPosix
import SatchelBytes
import SatchelHTTP
import SatchelSystem
import Testing

/// Issue 48, point 1: the stall watchdog finds a blocked event loop, says how long it was blocked and what every
/// thread was doing at that moment.
@Suite("Stall watchdog")
struct StallWatchdogTests {
    @Test("a loop blocked 300 ms is reported once, about 300 ms long, with the loop's thread found asleep in the kernel; a loop that runs is not")
    func blockedLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let stalls = Locked<[StallWatchdog.Stall]>([])
        let watchdog = StallWatchdog { stall in stalls.withLock { $0.append(stall) } }
        watchdog.watch(group, limit: .milliseconds(100))
        try await Task.sleep(for: .milliseconds(200))
        let loops = Array(group.makeIterator())
        let blocked = try await loops[0].submit { () -> String in
            usleep(300_000)  // blocking-ok: the test's own loop, blocked on purpose
            return Thread.current.name ?? ""
        }.get()
        for _ in 0..<250 where stalls.current.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(100))
        watchdog.stop()
        try await group.shutdownGracefully()
        let found = stalls.current
        #expect(found.count == 1 && found.first?.source == "event loop #1", "\(found.map(\.source))")
        guard let stall = found.first else { return }
        #expect((250...1_500).contains(stall.milliseconds), "\(stall.milliseconds) ms")
        #if os(Linux)
        let thread = stall.threads.first { $0.name == String(blocked.prefix(15)) }
        #expect(thread.map { ["nanosleep", "clock_nanosleep"].contains($0.syscall ?? "") && $0.state == "S" } == true,
                "\(stall.threads.map(\.line).joined(separator: "\n"))")
        #endif
    }
}
