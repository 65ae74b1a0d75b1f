import CSatchelSystem
import Foundation
import SatchelBytes
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A process Satchel starts: a player (`satchel play --exec`), a benchmark's peer tool, a test tool. It starts
/// with an empty signal mask and every signal at its default action — Swift's and NIO's threads block signals,
/// and a child that inherited that mask would ignore SIGTERM and SIGALRM — and, when asked, in a process group of
/// its own, so that stopping it stops whatever it started too. Never run through a shell: the arguments reach
/// the program as they are.
package final class ChildProcess: Sendable {
    /// The process ID.
    package let pid: pid_t
    /// The process group it leads, when it was started in one of its own.
    package let group: pid_t?
    private let status = Locked<Int32?>(nil)

    private init(pid: pid_t, group: pid_t?) {
        self.pid = pid
        self.group = group
    }

    /// Starts `executable` (a path, or a name looked up in `PATH`) with `arguments`, in `environment` (nil: this
    /// process's), in `directory` (nil: this one), with the given standard descriptors (nil: inherited).
    package static func spawn(_ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
                             ownGroup: Bool = false, input: Int32? = nil, output: Int32? = nil,
                             error: Int32? = nil) throws(SystemError) -> ChildProcess {
        let argv = [executable] + arguments
        let environment = (environment ?? ProcessInfo.processInfo.environment).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let result = withCStrings(argv) { argv in
            withCStrings(environment) { envp in
                satchel_spawn(executable, argv, envp, directory, ownGroup ? 1 : 0, input ?? -1, output ?? -1, error ?? -1, &pid)
            }
        }
        guard result == 0 else { throw SystemError("start", path: executable, errno: result) }
        return ChildProcess(pid: pid, group: ownGroup ? pid : nil)
    }

    /// A descriptor of `/dev/null`, open for the life of the process, for a child's discarded output.
    package static let nullDevice: Int32 = open("/dev/null", O_RDWR | O_CLOEXEC)

    /// Waits for the process to end (blocking the calling thread); answers its status as a shell gives it: the
    /// exit code, or 128 + the number of the signal that ended it.
    package func waitBlocking() -> Int32 {
        if let known = status.current { return known }
        var raw: Int32 = 0
        while true {
            let result = waitpid(pid, &raw, 0)
            if result == pid { break }
            if result < 0, errno == EINTR { continue }
            return status.current ?? 255  // reaped elsewhere (a second waiter): it answered already
        }
        let code = satchel_exit_status(raw)
        status.withLock { $0 = code }
        return code
    }

    /// Waits for the process to end (blocking the calling thread); answers its status and its peak memory (maximum
    /// resident set, in kilobytes on Linux), as `wait4` reports them.
    package func waitBlockingWithUsage() -> (status: Int32, peakKilobytes: Int) {
        var raw: Int32 = 0
        var usage = rusage()
        while true {
            let result = wait4(pid, &raw, 0, &usage)
            if result == pid { break }
            if result < 0, errno == EINTR { continue }
            return (status.current ?? 255, 0)
        }
        let code = satchel_exit_status(raw)
        status.withLock { $0 = code }
        #if canImport(Darwin)
        return (code, Int(usage.ru_maxrss) / 1024)  // bytes there
        #else
        return (code, Int(usage.ru_maxrss))
        #endif
    }

    /// Waits for the process to end on a thread of its own (no cooperative thread is held); answers its status.
    package func wait() async -> Int32 {
        await OwnThread.run { self.waitBlocking() }
    }

    /// Sends `signal` to the process's group when it leads one (everything it started, also once the process
    /// itself has ended), else to the process while it runs.
    package func signal(_ number: Int32) {
        if let group {
            _ = kill(-group, number)
        } else if status.current == nil {
            _ = kill(pid, number)
        }
    }

    /// Makes the process's group the foreground of the terminal on `fd` (a player that reads the keyboard gets
    /// it, and Ctrl-C), when this process's group holds it; nothing when `fd` is not a terminal or this process
    /// runs in the background.
    package func takeTerminal(_ fd: Int32 = 0) {
        guard let group else { return }
        _ = satchel_hand_terminal(fd, getpgrp(), group)
    }

    /// Gives the terminal on `fd` back to this process's group, when the child's group holds it.
    package func returnTerminal(_ fd: Int32 = 0) {
        guard let group else { return }
        _ = satchel_hand_terminal(fd, group, getpgrp())
    }
}

/// Runs `body` with `strings` as a NULL-terminated array of C strings.
private func withCStrings<T>(_ strings: [String], _ body: ([UnsafeMutablePointer<CChar>?]) -> T) -> T {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for pointer in pointers { free(pointer) } }
    return body(pointers)
}
