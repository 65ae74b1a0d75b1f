import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The calling thread's scheduling priority: Linux's nice value, which is the thread's own (`setpriority` with
/// `PRIO_PROCESS` names a thread by its kernel ID; 0, the caller).
///
/// An event loop answers every connection it holds, so on a loaded machine a loop waiting its turn for a CPU behind
/// bulk work (other processes, encodes, compactions) answers late however little it has to do. Raised a few levels,
/// the kernel gives it a larger share and runs it sooner on wake-up. A thread created by a raised thread, and a
/// process it starts, inherit its level: ``lowerToProcess()`` takes such a thread back.
package enum ThreadPriority {
    /// What asking for a higher priority came to.
    package enum Outcome: Equatable, Sendable {
        /// The thread now runs at this nice value.
        case raised(nice: Int32)
        /// The process may not raise a priority (it needs `CAP_SYS_NICE`, or an `RLIMIT_NICE` that allows the level):
        /// the thread is left as it was.
        case notPermitted
        /// The system has no per-thread nice value (macOS).
        case unsupported
    }

    /// The nice value of the process (its first thread), the level threads start at; nil where there is none.
    package static var processNice: Int32? {
        #if os(Linux)
        errno = 0
        let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
        return errno == 0 ? nice : nil
        #else
        return nil
        #endif
    }

    /// The calling thread's nice value; nil where there is none.
    package static var currentNice: Int32? {
        #if os(Linux)
        errno = 0
        let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        return errno == 0 ? nice : nil
        #else
        return nil
        #endif
    }

    /// Raises the calling thread `steps` nice levels above the process's (nice −10 for `steps` 10 in a process at
    /// 0), bounded by the highest level, −20.
    package static func raiseCurrentThread(by steps: Int32) -> Outcome {
        #if os(Linux)
        guard let base = processNice else { return .unsupported }
        let target = max(-20, base - max(0, steps))
        guard setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, target) == 0 else {
            return errno == EPERM || errno == EACCES ? .notPermitted : .unsupported
        }
        return .raised(nice: target)
        #else
        return .unsupported
        #endif
    }

    /// Takes the calling thread back to the process's level when it runs above it (a thread a raised loop created):
    /// always permitted, as it only lowers a priority.
    package static func lowerToProcess() {
        #if os(Linux)
        guard let base = processNice, let current = currentNice, current < base else { return }
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, base)
        #endif
    }
}
