import Foundation
import SatchelBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Finds the moments a process stops answering: heartbeats (an event loop's repeating task, a task of Swift's pool)
/// that a sampler on a thread of its own expects every few milliseconds. When one is later than its limit, the sampler
/// takes a snapshot of every thread of the process (``ThreadSnapshot``: name, state, what it waits in and on which
/// file), and once the heartbeat comes back it reports the stall with its length.
package final class StallWatchdog: @unchecked Sendable {
    /// A stall: which heartbeat was late, how late at most, when it started, and the threads as the sampler found them.
    package struct Stall: Codable, Sendable {
        /// The heartbeat's name ("event loop NIO-ELT-0-#1", "task pool").
        package var source: String
        /// How long it went without a beat, in milliseconds.
        package var milliseconds: Int
        /// When its last beat before the stall was, in seconds since 1970.
        package var since: Double
        /// The threads while it was stalled.
        package var threads: [ThreadSnapshot]
        /// Why, from the scheduler's times of the heartbeat's busiest thread (the one that ran and waited for a CPU the
        /// longest) from the moment the stall was found to its end (nil where `/proc` does not say).
        package var cause: StallCause?
        /// Over that time (``measuredMilliseconds``), what that thread did: ran on a CPU, waited for one while runnable
        /// (the rest it slept).
        package var ranMilliseconds: Int?
        package var waitedMilliseconds: Int?
        package var measuredMilliseconds: Int?
        /// A few stacks of its threads taken while they ran late (when the watchdog samples them: ``StackSampler``).
        package var stacks: [StackSample]?
    }

    /// One thread's stack, innermost frame first, as ``StackSampler`` writes frames.
    package struct StackSample: Codable, Sendable {
        /// The thread's name.
        package var thread: String
        /// Its frames, `image+0xoffset`.
        package var frames: [String]
    }

    /// A heartbeat: call ``beat()`` from the context it watches.
    package final class Heartbeat: @unchecked Sendable {
        let name: String
        let limitNanoseconds: UInt64
        private struct State {
            var last = StallWatchdog.now()
            /// The kernel's IDs of the threads it has beaten from, by their `pthread_t` (at most ``maximumThreads``).
            var threads: [UInt: Int32] = [:]
        }
        private let state = Locked(State())
        static let maximumThreads = 64

        init(name: String, limit: Duration) {
            self.name = name
            limitNanoseconds = UInt64(limit.components.seconds) * 1_000_000_000 + UInt64(limit.components.attoseconds / 1_000_000_000)
        }

        /// The watched context is alive now.
        package func beat() {
            let now = StallWatchdog.now(), thread = Self.currentThread()
            let known = state.withLock { state in
                state.last = now
                return state.threads[thread] != nil || state.threads.count >= Self.maximumThreads
            }
            // Once per thread: its kernel ID, for the scheduler's times of it.
            if !known, let id = SchedulerTime.currentThread() { state.withLock { $0.threads[thread] = id } }
        }

        var lastBeat: UInt64 { state.current.last }
        /// The kernel's IDs of the threads it has beaten from.
        var threadIDs: [Int32] { Array(state.current.threads.values) }
        /// The threads it has beaten from: their `pthread_t` and kernel ID.
        var threads: [(handle: UInt, id: Int32)] { state.current.threads.map { ($0.key, $0.value) } }

        private static func currentThread() -> UInt {
            #if canImport(Darwin)
            UInt(bitPattern: pthread_self())
            #else
            UInt(pthread_self())
            #endif
        }
    }

    /// How often heartbeats are expected to beat.
    package static let beatInterval = Duration.milliseconds(20)

    private let report: @Sendable (Stall) -> Void
    private let found: (@Sendable (String) -> Void)?
    private let samplesStacks: Bool
    /// Stacks a stall keeps at most, and the time between two rounds of them.
    package static let stacksKept = 6
    static let stackInterval: UInt64 = 20_000_000
    private let heartbeats = Locked<[Heartbeat]>([])
    private let stopped = Locked(false)
    /// The task pool's heartbeat task, kept to be cancelled at ``stop()``.
    private let poolBeat = Locked<Task<Void, Never>?>(nil)

    /// A watchdog that hands each stall, when it ends, to `report`, and names the heartbeat to `found` the moment a
    /// stall is found, while it lasts (both called on the sampler's thread; `found` may take its time: a diagnosis).
    /// With `stacks`, the late heartbeat's running threads are sampled while it is late (``StackSampler``: a signal to
    /// each, for a diagnosis, a test run's).
    package init(report: @escaping @Sendable (Stall) -> Void, found: (@Sendable (String) -> Void)? = nil, stacks: Bool = false) {
        self.report = report
        self.found = found
        samplesStacks = stacks && StackSampler.available
        let thread = Thread { [self] in sample() }
        thread.name = "satchel-watchdog"
        thread.start()
    }

    /// A heartbeat named `name` that is late past `limit`.
    package func heartbeat(_ name: String, limit: Duration) -> Heartbeat {
        let heartbeat = Heartbeat(name: name, limit: limit)
        heartbeats.withLock { $0.append(heartbeat) }
        return heartbeat
    }

    /// Beats for Swift's task pool every ``beatInterval`` from a task of the pool, late past `limit`.
    package func watchTaskPool(limit: Duration) {
        let heartbeat = heartbeat("task pool", limit: limit)
        let beating = Task {
            while !Task.isCancelled {
                heartbeat.beat()
                try? await Task.sleep(for: StallWatchdog.beatInterval)
            }
        }
        poolBeat.withLock { $0?.cancel(); $0 = beating }
    }

    /// Stops sampling and beating.
    package func stop() {
        stopped.withLock { $0 = true }
        poolBeat.withLock { $0?.cancel(); $0 = nil }
    }

    private struct Open {
        var since: UInt64
        var wall: Double
        var worst: UInt64
        var threads: [ThreadSnapshot]
        /// When it was found, and its heartbeat's threads' scheduler times then.
        var found: UInt64
        var schedule: [Int32: SchedulerTime]
        var stacks: [StackSample] = []
        var sampled: UInt64 = 0
    }

    private func sample() {
        var open: [ObjectIdentifier: Open] = [:]
        while !stopped.current {
            usleep(10_000)  // blocking-ok: the sampler's own thread
            let now = Self.now()
            for heartbeat in heartbeats.current {
                let key = ObjectIdentifier(heartbeat)
                let last = heartbeat.lastBeat
                let age = now > last ? now - last : 0
                let late = age > heartbeat.limitNanoseconds + UInt64(Self.beatInterval.components.attoseconds / 1_000_000_000)
                if let stall = open[key], stall.since != last || !late {
                    // It beat again: the stall lasted from its last beat before to the next one.
                    open[key] = nil
                    let length = max(stall.worst, last > stall.since ? last - stall.since : 0)
                    var found = Stall(source: heartbeat.name, milliseconds: Int(length / 1_000_000), since: stall.wall, threads: stall.threads,
                                      stacks: stall.stacks.isEmpty ? nil : stall.stacks)
                    Self.account(&found, from: stall, now: now, limit: heartbeat.limitNanoseconds)
                    report(found)
                }
                guard late else { continue }
                if var stall = open[key] {
                    stall.worst = max(stall.worst, age)
                    if samplesStacks, stall.stacks.count < Self.stacksKept, now - stall.sampled >= Self.stackInterval {
                        stall.sampled = now
                        stall.stacks += Self.stacks(of: heartbeat).prefix(Self.stacksKept - stall.stacks.count)
                    }
                    open[key] = stall
                } else {
                    let wall = Date().timeIntervalSince1970 - Double(age) / 1e9
                    let schedule = heartbeat.threadIDs.compactMap { id in SchedulerTime.of(thread: id).map { (id, $0) } }
                    open[key] = Open(since: last, wall: wall, worst: age, threads: ThreadSnapshot.all(), found: now,
                                     schedule: Dictionary(schedule, uniquingKeysWith: { first, _ in first }))
                    found?(heartbeat.name)
                }
            }
        }
    }

    /// The stacks of `heartbeat`'s threads that are running now (one asleep in a system call is left alone: the signal
    /// would end its call early).
    private static func stacks(of heartbeat: Heartbeat) -> [StackSample] {
        heartbeat.threads.compactMap { thread in
            guard let snapshot = ThreadSnapshot.thread(Int(thread.id)), snapshot.state == "R",
                  let frames = StackSampler.sample(thread: thread.handle) else { return nil }
            return StackSample(thread: snapshot.name, frames: frames)
        }
    }

    /// Sets the stall's cause from its heartbeat's threads' scheduler times between when it was found and `now`: those of
    /// the thread that ran and waited for a CPU the longest. A loop has one thread; the task pool's idle threads, asleep
    /// while one is held, would otherwise make a held pool look blocked.
    private static func account(_ stall: inout Stall, from open: Open, now: UInt64, limit: UInt64) {
        let deltas = open.schedule.compactMap { id, before in SchedulerTime.of(thread: id).flatMap { $0.since(before) } }
        let window = now > open.found ? now - open.found : 0
        guard let busiest = SchedulerTime.busiest(deltas), window > 0 else { return }
        stall.cause = StallCause.of(busiest, window: window, limit: limit)
        stall.ranMilliseconds = Int(busiest.running / 1_000_000)
        stall.waitedMilliseconds = Int(busiest.runnable / 1_000_000)
        stall.measuredMilliseconds = Int(window / 1_000_000)
    }

    /// The monotonic clock, in nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
