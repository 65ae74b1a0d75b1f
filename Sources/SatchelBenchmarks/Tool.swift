import Foundation
import SatchelSystem

/// Runs the peer tools the benchmarks compare against, each with a clean signal mask (``ChildProcess``: a peer
/// that inherited the blocked signals of this process's threads would never end — `openssl speed` times itself
/// with SIGALRM).
enum Tool {
    /// Standard output of `arguments` (a program found in PATH, then its arguments), or nil when it cannot start
    /// or fails.
    static func output(_ arguments: [String]) -> String? {
        guard let program = arguments.first else { return nil }
        let pipe = Pipe()
        guard let child = try? ChildProcess.spawn(program, Array(arguments.dropFirst()), output: pipe.fileHandleForWriting.fileDescriptor,
                                                  error: ChildProcess.nullDevice) else { return nil }
        try? pipe.fileHandleForWriting.close()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return child.waitBlocking() == 0 ? output : nil
    }

    /// ``output(_:)`` waited for on a thread of its own. A benchmark whose server runs in this process uses this for
    /// its load: waiting on one of the cooperative pool's threads (one a core) would leave the server under test a
    /// thread short — on two cores, half its capacity.
    static func outputOffPool(_ arguments: [String]) async -> String? {
        await OwnThread.run { output(arguments) }
    }

    /// Runs `name` with `arguments` (output discarded); answers its wall time in seconds and its peak memory in MB;
    /// throws when it fails.
    ///
    /// The peak is taken by GNU time (`/usr/bin/time`, a small process that forks the tool) when it is installed:
    /// on Linux a process started straight from this one — `posix_spawn` shares this process's memory until the
    /// exec — reports as its own peak this process's peak so far, whatever the tool itself used.
    static func measure(_ name: String, _ arguments: [String]) throws -> (seconds: Double, peakMB: Double) {
        let start = Date()
        let time = "/usr/bin/time"
        let report = NSTemporaryDirectory() + "satchel-bench-peak-\(getpid())"
        let viaTime = FileManager.default.isExecutableFile(atPath: time)
        let child: ChildProcess
        do {
            child = try viaTime ? ChildProcess.spawn(time, ["-f", "%M", "-o", report, name] + arguments, output: ChildProcess.nullDevice,
                                                      error: ChildProcess.nullDevice)
                : ChildProcess.spawn(name, arguments, output: ChildProcess.nullDevice, error: ChildProcess.nullDevice)
        } catch {
            throw BenchmarkError(message: "\(name) cannot start: \(error.description)")
        }
        let (status, directPeak) = child.waitBlockingWithUsage()
        let seconds = Date().timeIntervalSince(start)
        guard status == 0 else { throw BenchmarkError(message: "\(name) failed (\(status))") }
        guard viaTime else { return (seconds, Double(directPeak) / 1024) }
        defer { try? FileManager.default.removeItem(atPath: report) }
        let text = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        guard let kilobytes = text.split(whereSeparator: \.isNewline).last.flatMap({ Double($0.trimmingCharacters(in: .whitespaces)) }) else {
            throw BenchmarkError(message: "\(time) reported no peak for \(name)")
        }
        return (seconds, kilobytes / 1024)
    }

    /// Runs `name` with `arguments` (output discarded); throws when it fails.
    static func run(_ name: String, _ arguments: [String]) throws {
        let child: ChildProcess
        do { child = try ChildProcess.spawn(name, arguments, output: ChildProcess.nullDevice) } catch {
            throw BenchmarkError(message: "\(name) cannot start: \(error.description)")
        }
        let status = child.waitBlocking()
        guard status == 0 else { throw BenchmarkError(message: "\(name) failed (\(status))") }
    }
}
