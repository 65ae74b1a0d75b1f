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
        let stalls = Locked<[StallWatchdog.Stall]>([]), found = Locked<[String]>([])
        let watchdog = StallWatchdog(report: { stall in stalls.withLock { $0.append(stall) } }, found: { source in found.withLock { $0.append(source) } },
                                     stacks: true)
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
        #expect(found.current == ["event loop #1"], "the hook is told once, while the stall lasts: \(found.current)")
        let reported = stalls.current
        #expect(reported.count == 1 && reported.first?.source == "event loop #1", "\(reported.map(\.source))")
        guard let stall = reported.first else { return }
        #expect((250...1_500).contains(stall.milliseconds), "\(stall.milliseconds) ms")
        #if os(Linux)
        let thread = stall.threads.first { $0.name == String(blocked.prefix(15)) }
        #expect(thread.map { ["nanosleep", "clock_nanosleep"].contains($0.syscall ?? "") && $0.state == "S" } == true,
                "\(stall.threads.map(\.line).joined(separator: "\n"))")
        #expect(stall.stacks == nil, "a thread asleep in a call is not sent the sampler's signal (it would end the call early)")
        #expect(stall.cause == .blocked, "asleep in a call: \(String(describing: stall.cause)), ran \(stall.ranMilliseconds ?? -1) ms, waited \(stall.waitedMilliseconds ?? -1) ms")
        #endif
    }

    @Test("a loop that computes for 400 ms of its thread's CPU time is a busy stall: its thread ran past the limit while it was late, even on a loaded machine")
    func busyLoop() async throws {
        let stall = try await Self.stall { loop in _ = try await loop.submit { Self.holdTheLoop() }.get() }
        #if os(Linux)
        #expect(stall?.cause == .busy, "\(String(describing: stall?.cause)): ran \(stall?.ranMilliseconds ?? -1) ms, waited \(stall?.waitedMilliseconds ?? -1) ms of \(stall?.measuredMilliseconds ?? -1)")
        #endif
    }

    #if os(Linux)
    @Test("a busy loop's stall carries its thread's stacks, taken while it ran: addr2line names the function that held the loop in them")
    func busyLoopStacks() async throws {
        let stall = try await Self.stall(stacks: true) { loop in _ = try await loop.submit { Self.holdTheLoop() }.get() }
        let stacks = try #require(stall?.stacks, "no stack was taken")
        #expect((2...StallWatchdog.stacksKept).contains(stacks.count), "a few, one every 20 ms while late: \(stacks.count)")
        // Innermost first, as `image+0xoffset`: this test binary's innermost frame of each, named by addr2line.
        let image = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let offsets = stacks.compactMap { $0.frames.first { $0.hasPrefix(image + "+0x") } }.map { String($0.dropFirst(image.count + 1)) }
        let names = try await OwnThread.run { () throws -> String in
            let process = Process(), output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["addr2line", "-f", "-e", image] + offsets
            process.standardOutput = output
            try process.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()  // blocking-ok: a thread of its own
            return text
        }
        #expect(names.contains("holdTheLoop"), "the innermost frames of this binary: \(names)")
    }
    #endif

    /// Computes for 400 ms of its thread's CPU time (at most 10 s of the wall's).
    @inline(never)
    static func holdTheLoop() -> Int {
        // CPU time, not the wall's: on a loaded machine the thread also waits for a CPU meanwhile.
        func used() -> Int64 {
            var time = timespec()
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
            return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
        }
        let (start, clock) = (used(), ContinuousClock())
        let deadline = clock.now + .seconds(10)
        var spins = 0
        while used() - start < 400_000_000, clock.now < deadline { spins &+= 1 }
        return spins
    }

    #if os(Linux)
    @Test("a thread of its own is named so (Linux would give it its creator's name, a task-pool thread's), so a stall's snapshot tells it from the pool's")
    func ownThreadName() async throws {
        let name = try await OwnThread.run { try String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) }
        #expect(name.trimmingCharacters(in: .whitespacesAndNewlines) == "satchel-own")
    }
    #endif

    // A starved thread is not made on purpose here: Linux runs even a SCHED_IDLE thread a little every scheduling
    // period, so a real starvation needs the tens of runnable threads a loaded machine has. The rule is tested alone.
    @Test("the cause: busy when a late thread ran past the limit, else starved or blocked by whichever of waiting for a CPU and sleeping took longer")
    func causes() {
        let ms: UInt64 = 1_000_000
        let limit = 100 * ms
        #expect(StallCause.of(SchedulerTime(running: 10 * ms, runnable: 250 * ms), window: 300 * ms, limit: limit) == .starved)
        #expect(StallCause.of(SchedulerTime(running: 280 * ms, runnable: 10 * ms), window: 300 * ms, limit: limit) == .busy)
        // Ran past the limit while the machine also kept it waiting longer: its own work would have stalled it.
        #expect(StallCause.of(SchedulerTime(running: 120 * ms, runnable: 170 * ms), window: 300 * ms, limit: limit) == .busy)
        #expect(StallCause.of(SchedulerTime(running: 5 * ms, runnable: 5 * ms), window: 300 * ms, limit: limit) == .blocked)
        #expect(StallCause.of(SchedulerTime(running: 5 * ms, runnable: 100 * ms), window: 300 * ms, limit: limit) == .blocked)
    }

    @Test("a pool's stall is judged by its busiest thread: one held running beside threads asleep is busy, not blocked (as the average over them said)")
    func busiestThread() throws {
        let ms: UInt64 = 1_000_000
        let earlier = SchedulerTime(running: 1_000 * ms, runnable: 50 * ms)
        let held = try #require(SchedulerTime(running: 1_290 * ms, runnable: 60 * ms).since(earlier))
        let asleep = [SchedulerTime(running: 1 * ms, runnable: 0), SchedulerTime(running: 0, runnable: 1 * ms), SchedulerTime(running: 2 * ms, runnable: 0)]
        let busiest = try #require(SchedulerTime.busiest(asleep + [held] + asleep))
        #expect(busiest == SchedulerTime(running: 290 * ms, runnable: 10 * ms))
        #expect(StallCause.of(busiest, window: 300 * ms, limit: 100 * ms) == .busy)
        let all = ([held] + asleep).reduce((0, 0)) { ($0.0 + $1.running, $0.1 + $1.runnable) }
        let average = SchedulerTime(running: all.0 / 4, runnable: all.1 / 4)
        #expect(StallCause.of(average, window: 300 * ms, limit: 100 * ms) == .blocked, "the average the watchdog used before")
        #expect(SchedulerTime(running: 5, runnable: 5).since(earlier) == nil, "a thread ID reused since: no time")
        #expect(SchedulerTime.busiest([]) == nil)
    }

    /// The one stall of a loop of a group of its own (watched past 100 ms) that `act` causes, once the loop has beaten a while.
    static func stall(stacks: Bool = false, _ act: (any EventLoop) async throws -> Void) async throws -> StallWatchdog.Stall? {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let stalls = Locked<[StallWatchdog.Stall]>([])
        let watchdog = StallWatchdog(report: { stall in stalls.withLock { $0.append(stall) } }, stacks: stacks)
        watchdog.watch(group, limit: .milliseconds(100))
        try await Task.sleep(for: .milliseconds(200))
        try await act(group.next())
        for _ in 0..<250 where stalls.current.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(100))
        watchdog.stop()
        try await group.shutdownGracefully()
        #expect(stalls.current.count >= 1, "no stall was reported")
        return stalls.current.max { $0.milliseconds < $1.milliseconds }
    }
}
