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

    /// Runs `name` with `arguments` (output discarded); answers its wall time in seconds and its peak memory in MB;
    /// throws when it fails.
    static func measure(_ name: String, _ arguments: [String]) throws -> (seconds: Double, peakMB: Double) {
        let start = Date()
        let child: ChildProcess
        do { child = try ChildProcess.spawn(name, arguments, output: ChildProcess.nullDevice, error: ChildProcess.nullDevice) } catch {
            throw BenchmarkError(message: "\(name) cannot start: \(error.description)")
        }
        let (status, peak) = child.waitBlockingWithUsage()
        guard status == 0 else { throw BenchmarkError(message: "\(name) failed (\(status))") }
        return (Date().timeIntervalSince(start), Double(peak) / 1024)
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
