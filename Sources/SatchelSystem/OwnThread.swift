import Foundation

/// Work that blocks (a wait on another process, a lock, a read) or runs long on the CPU (a manifest of a quarter of a
/// million lines), run on a thread of its own: no thread of Swift's task pool (one a core) or of an event loop is held.
package enum OwnThread {
    /// The threads' name: Linux gives a new thread its creator's, so without it a thread of its own would show in a
    /// stall's snapshot as one of the task pool's.
    static let name = "satchel-own"

    /// Names the calling thread. On Linux the kernel's name is written directly (`/proc/thread-self/comm`): through
    /// Foundation's `Thread.current.name` alone a new thread once kept its creator's name (a task-pool thread's).
    private static func named() {
        Thread.current.name = name
        #if os(Linux)
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = name.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
        close(descriptor)
        #endif
    }

    /// `body`'s value, computed on a new thread.
    package static func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                named()
                ThreadPriority.lowerToProcess()  // made by a raised event loop, it would run at the loop's priority
                continuation.resume(with: Result { try body() })
            }
            thread.stackSize = 4 << 20
            thread.start()
        }
    }

    /// `body`'s value, computed on a new thread (for work that cannot fail).
    package static func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            let thread = Thread {
                named()
                ThreadPriority.lowerToProcess()
                continuation.resume(returning: body())
            }
            thread.stackSize = 4 << 20
            thread.start()
        }
    }
}
