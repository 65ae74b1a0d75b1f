import Foundation

/// One thread of this process as Linux shows it under `/proc/self/task`: its name, its state (R running, S sleeping,
/// D in uninterruptible I/O), the kernel function it waits in, and the system call it is in with the file that call
/// names (a `write()` to the log, an `fsync()` of a segment). Empty where `/proc` is not (macOS).
package struct ThreadSnapshot: Codable, Sendable, Equatable {
    /// The kernel's thread ID.
    package var id: Int
    /// The thread's name (`NIO-ELT-0-#1`, `satchel-log`, …).
    package var name: String
    /// The state letter.
    package var state: String
    /// The kernel function it waits in, if any.
    package var waitChannel: String?
    /// The system call it is in (`write`, `fsync`, a number when unnamed), nil when running in user space.
    package var syscall: String?
    /// The file the call's first argument names, for calls on a descriptor.
    package var file: String?

    /// Every thread of this process, now.
    package static func all() -> [ThreadSnapshot] {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return [] }
        return tasks.compactMap(Int.init).sorted().compactMap(thread)
    }

    /// The thread `id` of this process, or nil once it has ended.
    static func thread(_ id: Int) -> ThreadSnapshot? {
        let base = "/proc/self/task/\(id)/"
        guard let stat = read(base + "stat") else { return nil }
        let name = read(base + "comm")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
        // The state follows the name, which is in parentheses and may itself hold them.
        let state = stat.range(of: ")", options: .backwards).map { String(stat[$0.upperBound...].dropFirst().prefix(1)) } ?? "?"
        let channel = read(base + "wchan").flatMap { $0.isEmpty || $0 == "0" ? nil : $0 }
        var snapshot = ThreadSnapshot(id: id, name: name, state: state, waitChannel: channel)
        if let call = read(base + "syscall")?.split(separator: " "), let first = call.first, let number = Int(first), number >= 0 {
            snapshot.syscall = SystemCalls.name(number) ?? String(number)
            if SystemCalls.takesDescriptor(number), call.count > 1, let fd = Int(call[1].dropFirst(2), radix: 16) {
                snapshot.file = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")
            }
        }
        return snapshot
    }

    /// A line for a report: `NIO-ELT-0-#1 [S] write /tmp/satchel.log (pipe_write)`.
    package var line: String {
        var text = "\(name) [\(state)]"
        if let syscall { text += " " + syscall }
        if let file { text += " " + file }
        if let waitChannel { text += " (\(waitChannel))" }
        return text
    }

    private static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

/// The system calls a stalled thread is most often found in, by number on this machine's architecture.
enum SystemCalls {
    #if arch(x86_64)
    static let names: [Int: String] = [0: "read", 1: "write", 7: "poll", 17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev",
                                       35: "nanosleep", 44: "sendto", 45: "recvfrom", 61: "wait4", 74: "fsync", 75: "fdatasync",
                                       202: "futex", 230: "clock_nanosleep", 232: "epoll_wait", 257: "openat", 263: "unlinkat",
                                       271: "ppoll", 277: "sync_file_range", 281: "epoll_pwait", 285: "fallocate", 82: "rename", 316: "renameat2"]
    static let onDescriptor: Set<Int> = [0, 1, 17, 18, 19, 20, 44, 45, 74, 75, 232, 277, 281, 285]
    #elseif arch(arm64)
    static let names: [Int: String] = [63: "read", 64: "write", 67: "pread64", 68: "pwrite64", 65: "readv", 66: "writev", 101: "nanosleep",
                                       206: "sendto", 207: "recvfrom", 260: "wait4", 82: "fsync", 83: "fdatasync", 98: "futex",
                                       115: "clock_nanosleep", 22: "epoll_pwait", 56: "openat", 35: "unlinkat", 73: "ppoll",
                                       84: "sync_file_range", 47: "fallocate", 276: "renameat2"]
    static let onDescriptor: Set<Int> = [63, 64, 67, 68, 65, 66, 206, 207, 82, 83, 22, 84, 47]
    #else
    static let names: [Int: String] = [:]
    static let onDescriptor: Set<Int> = []
    #endif

    static func name(_ number: Int) -> String? { names[number] }
    static func takesDescriptor(_ number: Int) -> Bool { onDescriptor.contains(number) }
}
