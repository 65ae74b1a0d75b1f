import Foundation
import SatchelBytes
import SatchelHTTP
import SatchelSystem

/// The stall watchdog of the test process (issue 48): when `$SATCHEL_STALL_FILE` names a file (`scripts/test` sets it),
/// every event loop of SwiftNIO's shared group and Swift's task pool beat every 20 ms, and each stall (a loop late past
/// 100 ms, the pool past 1 s) is appended to the file as a JSON line with every thread's state and a few stacks of its
/// threads while they ran late, for `scripts/stall-report` to set beside the tests running at that moment.
public enum TestWatchdog {
    private static let watchdog = Locked<StallWatchdog?>(nil)

    /// Starts the watchdog once, when the environment asks for it; first raises SwiftNIO's shared loops 10 levels above
    /// the process, as `satchel serve --loop-priority 10` does on a host shared with bulk work (where the process may):
    /// the in-process servers share two cores with encodes, browsers and, in the load runs, a CPU hog.
    public static func start() {
        Task.detached { _ = await ThreadPriority.raiseLoops(by: 10) }
        guard let path = ProcessInfo.processInfo.environment["SATCHEL_STALL_FILE"], !path.isEmpty else { return }
        watchdog.withLock { running in
            guard running == nil else { return }
            let file = Locked<FileHandle?>(nil)
            let dog = StallWatchdog(report: { stall in
                guard let data = try? JSONCoding.encoder().encode(stall) else { return }
                file.withLock { handle in
                    if handle == nil {
                        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
                        handle = FileHandle(forWritingAtPath: path)
                    }
                    handle?.seekToEndOfFile()
                    handle?.write(data + Data("\n".utf8))
                }
            }, found: stacks(into: ProcessInfo.processInfo.environment["SATCHEL_STALL_STACKS"]), stacks: true)
            dog.watch(limit: .milliseconds(100))
            dog.watchTaskPool(limit: .seconds(1))
            running = dog
        }
    }

    /// With `$SATCHEL_STALL_STACKS` naming a folder: at the first four task-pool stalls found, every thread's stack
    /// (gdb), written there — what held the pool's threads. gdb stops the whole process while it reads them: a
    /// diagnosis run's, never a counted one's.
    private static func stacks(into folder: String?) -> (@Sendable (String) -> Void)? {
        guard let folder, !folder.isEmpty, let gdb = TestMedia.which("gdb") else { return nil }
        let taken = Locked(0)
        return { source in
            guard source == "task pool", taken.withLock({ $0 += 1; return $0 <= 4 }) else { return }
            let file = folder + "/stacks-\(Int(Date().timeIntervalSince1970 * 1000)).txt"
            // Straight into the file: this process, stopped while gdb reads it, could not drain a pipe. Functions and
            // lines only: a frame's arguments may be a key's bytes.
            _ = try? ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "exec \"$0\" -p \"$1\" -batch -iex 'set debuginfod enabled off' -ex 'set print frame-arguments none' -ex 'set print frame-info location-and-address' -ex 'thread apply all bt 40' >\"$2\" 2>&1",
                                                                          gdb.path, "\(getpid())", file])
        }
    }
}
