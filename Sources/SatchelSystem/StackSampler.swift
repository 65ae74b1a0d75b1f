import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Another thread's call stack, taken while it runs: the thread is sent `SIGPROF`, whose handler records its return
/// addresses (glibc's `backtrace`) and posts a semaphore the sampler waits on. The stall watchdog takes a few of a late
/// event loop's stacks this way, so a report names the code that held the loop, not only that it ran. Addresses are
/// written as `image+0xoffset` from `/proc/self/maps`, for `addr2line` to name afterwards (the tests' binaries keep no
/// dynamic symbols). Linux only; elsewhere nothing is taken.
package enum StackSampler {
    /// Frames one sample holds at most.
    static let depth: Int32 = 48

    /// Whether the handler is installed (installs it at the first call).
    package static var available: Bool { installed }

    #if os(Linux)
    private typealias Backtrace = @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, Int32) -> Int32

    /// What the signal handler touches, made before it is installed (a global's first use runs its initialiser, which
    /// a handler must not; later uses only check that it ran).
    private struct Shared: @unchecked Sendable {
        let frames = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: Int(depth))
        let count = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
        let done = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        let backtrace: Backtrace?
    }

    private static let shared: Shared = {
        // glibc's `backtrace` is not in Swift's Glibc module; the first call loads the unwinder, which a signal
        // handler must not do.
        let backtrace = dlsym(nil, "backtrace").map { unsafeBitCast($0, to: Backtrace.self) }
        let shared = Shared(backtrace: backtrace)
        sem_init(shared.done, 0, 0)
        if let backtrace { _ = backtrace(shared.frames, depth) }
        return shared
    }()

    private static let installed: Bool = {
        guard StackSampler.shared.backtrace != nil else { return false }
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            let shared = StackSampler.shared
            shared.count.pointee = shared.backtrace?(shared.frames, StackSampler.depth) ?? 0
            sem_post(shared.done)
        }
        action.sa_flags = Int32(SA_RESTART)
        sigemptyset(&action.sa_mask)
        return sigaction(SIGPROF, &action, nil) == 0
    }()

    private static let lock = NSLock()
    #endif

    /// The stack of the thread `thread` (a `pthread_t`) as `image+0xoffset` frames, innermost first, or nil when it
    /// did not answer within `timeout` (or this platform takes none). Only for a thread that is running: one asleep in
    /// a system call would be woken by the signal.
    package static func sample(thread: UInt, timeout: Duration = .milliseconds(50)) -> [String]? {
        #if os(Linux)
        guard installed else { return nil }
        lock.lock()
        defer { lock.unlock() }
        while sem_trywait(shared.done) == 0 {}  // a late answer to an earlier sample
        shared.count.pointee = 0
        guard pthread_kill(pthread_t(thread), SIGPROF) == 0 else { return nil }
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + Int(timeout.components.attoseconds / 1_000_000_000) + Int(timeout.components.seconds) * 1_000_000_000
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        guard sem_timedwait(shared.done, &deadline) == 0 else { return nil }
        let addresses = (0..<Int(shared.count.pointee)).map { UInt(bitPattern: shared.frames[$0]) }
        // The handler's own frame and the kernel's return trampoline first.
        return ImageMap.current().describe(Array(addresses.dropFirst(2)))
        #else
        return nil
        #endif
    }
}

/// The images mapped into this process (`/proc/self/maps`): an address as `image+0xoffset`, the offset from where the
/// image's first page is mapped (what `addr2line` takes for an executable or a shared library built position-independent).
struct ImageMap {
    private var ranges: [(start: UInt, end: UInt, image: String)] = []
    private var bases: [String: UInt] = [:]

    /// This process's map, now.
    static func current() -> ImageMap {
        // Read to its end: a /proc file says it is empty, and one read gives only its first page of lines.
        guard let file = FileHandle(forReadingAtPath: "/proc/self/maps"), let data = try? file.readToEnd() else { return ImageMap() }
        try? file.close()
        return ImageMap(maps: String(decoding: data, as: UTF8.self))
    }

    init(maps: String = "") {
        for line in maps.split(separator: "\n") {
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: true)
            guard fields.count == 6 else { continue }
            let image = fields[5].trimmingCharacters(in: .whitespaces), bounds = fields[0].split(separator: "-")
            guard image.hasPrefix("/"), bounds.count == 2, let start = UInt(bounds[0], radix: 16), let end = UInt(bounds[1], radix: 16),
                  let offset = UInt(fields[2], radix: 16) else { continue }
            if offset == 0, bases[image] == nil { bases[image] = start }
            ranges.append((start, end, image))
        }
    }

    /// Each address as `image+0xoffset`, or `0xaddress` outside every image.
    func describe(_ addresses: [UInt]) -> [String] {
        addresses.map { address in
            guard let range = ranges.first(where: { address >= $0.start && address < $0.end }), let base = bases[range.image] else {
                return "0x" + String(address, radix: 16)
            }
            return range.image + "+0x" + String(address - base, radix: 16)
        }
    }
}
