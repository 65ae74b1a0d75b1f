import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How long a thread has run on a CPU, and waited for one while runnable, since it started: Linux's
/// `/proc/self/task/ID/schedstat` (nanoseconds). What tells a thread the machine starved from one that ran too long or
/// slept in a call.
package struct SchedulerTime: Codable, Sendable, Equatable {
    /// Nanoseconds on a CPU.
    package var running: UInt64
    /// Nanoseconds runnable, waiting for a CPU.
    package var runnable: UInt64

    package init(running: UInt64, runnable: UInt64) {
        (self.running, self.runnable) = (running, runnable)
    }

    /// The thread `id`'s times, nil where `/proc` does not say (macOS, or the thread has ended).
    package static func of(thread id: Int32) -> SchedulerTime? {
        guard let data = FileManager.default.contents(atPath: "/proc/self/task/\(id)/schedstat") else { return nil }
        let fields = String(decoding: data, as: UTF8.self).split(separator: " ").prefix(2).compactMap { UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
        guard fields.count == 2 else { return nil }
        return SchedulerTime(running: fields[0], runnable: fields[1])
    }

    /// The time from `earlier` to this, nil when `earlier` is not earlier (another thread reused the ID).
    package func since(_ earlier: SchedulerTime) -> SchedulerTime? {
        guard running >= earlier.running, runnable >= earlier.runnable else { return nil }
        return SchedulerTime(running: running - earlier.running, runnable: runnable - earlier.runnable)
    }

    /// Of several threads' times over one stall, the thread that ran and waited for a CPU the longest: the one the
    /// heartbeat was late behind (a pool's idle threads sleep through it).
    package static func busiest(_ times: [SchedulerTime]) -> SchedulerTime? {
        times.max { $0.running + $0.runnable < $1.running + $1.runnable }
    }

    /// The kernel's ID of the calling thread (`/proc/thread-self` names it), nil where there is none.
    package static func currentThread() -> Int32? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self") else { return nil }
        return target.split(separator: "/").last.flatMap { Int32($0) }
    }
}

/// Why a stall happened, from the scheduler's times of the late thread (a pool's busiest) over the stall.
package enum StallCause: String, Codable, Sendable, Equatable {
    /// The threads were runnable and waited for a CPU longer than they slept, and ran less than the limit: the machine
    /// was busy (other processes, or more runnable threads of this one than it has cores).
    case starved
    /// The threads ran past the heartbeat's limit on their own: work too long for the context it ran in (however much
    /// the machine also kept them waiting).
    case busy
    /// The threads neither ran nor waited for a CPU most of the time: they slept in a system call or on a lock.
    case blocked

    /// The cause of a stall measured over `window` nanoseconds, during which the late thread's times grew by `time`:
    /// busy when it ran `limit` or more (its own work would have stalled it), else starved or blocked by whichever of
    /// waiting for a CPU and sleeping took longer.
    package static func of(_ time: SchedulerTime, window: UInt64, limit: UInt64) -> StallCause {
        let (ran, waited) = (time.running, time.runnable)
        if ran >= limit { return .busy }
        let slept = window > ran + waited ? window - ran - waited : 0
        return waited >= slept ? .starved : .blocked
    }
}
