import Foundation
import SatchelTestSupport
import Testing

/// Issue 48: `satchel serve` runs its event loops above the rest of the process (`--loop-priority`), so a machine busy
/// with other work still gets an answer soon; a process that may not raise a priority says so and runs as before.
@Suite("satchel serve: event loops above the rest of the process")
struct ServeLoopPriorityTests {
    @Test("as root --loop-priority 10 runs the loops 10 nice levels above the process and its other threads; by default they are left; without CAP_SYS_NICE they are left and the log says what to do",
          .enabled(if: getuid() == 0))
    func loops() async throws {
        #if os(Linux)
        let folder = try TestMedia.temporaryDirectory("loop-priority")
        let binary = try #require(CLIRunner.binary)
        try await TestMedia.offloaded {
            func serve(_ name: String, _ extra: [String] = [], capabilityDropped: Bool = false) throws -> (loops: [Int32], pool: [Int32], others: [Int32], base: Int32, log: String) {
                let log = folder.appendingPathComponent("\(name).log").path
                let arguments = ["serve", "--insecure-no-entitlement", "--data-dir", folder.appendingPathComponent(name).path, "--port", "0", "--log-file", log] + extra
                let server = capabilityDropped
                    ? try LineReader(["--inh-caps=-sys_nice", "--bounding-set=-sys_nice", binary.path] + arguments, program: URL(fileURLWithPath: "/usr/bin/setpriv"))
                    : try LineReader(arguments)
                defer { server.stop() }
                #expect(server.wait(for: "listening on", seconds: 30), "\(server.lines) \(server.stderr)")
                let threads = Self.threads(of: server.pid)
                let base = try #require(threads.first { $0.id == server.pid }?.nice)
                let loops = threads.filter { $0.name.hasPrefix("NIO-SGLTN") }.map(\.nice)
                let pool = threads.filter { $0.name.hasPrefix("TP-#") }.map(\.nice)  // the blocking I/O threads
                let others = threads.filter { !$0.name.hasPrefix("NIO-SGLTN") }.map(\.nice)
                server.stop()
                return (loops, pool, others, base, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
            }
            let raised = try serve("raised", ["--loop-priority", "10"])
            #expect(!raised.loops.isEmpty && raised.loops.allSatisfy { $0 == max(-20, raised.base - 10) }, "\(raised.loops) over \(raised.base)")
            #expect(!raised.pool.isEmpty && raised.pool.allSatisfy { $0 == raised.base }, "\(raised.pool)")
            // (libdispatch runs some of its threads a few levels up on its own: none at the loops' level)
            #expect(raised.others.allSatisfy { $0 > max(-20, raised.base - 10) }, "\(raised.others)")
            #expect(raised.log.contains("event loops raised above the process"), "\(raised.log.suffix(800))")
            let left = try serve("left")
            #expect(!left.loops.isEmpty && left.loops.allSatisfy { $0 == left.base }, "\(left.loops)")
            #expect(!left.log.contains("event loops"))
            let refused = try serve("refused", ["--loop-priority", "10"], capabilityDropped: true)
            #expect(!refused.loops.isEmpty && refused.loops.allSatisfy { $0 == refused.base }, "\(refused.loops)")
            #expect(refused.log.contains("event loops left at the process's priority: --loop-priority needs root or CAP_SYS_NICE (or leave it out)"),
                    "\(refused.log.suffix(800))")
            let bad = try CLIRunner.run(["serve", "--insecure-no-entitlement", "--data-dir", folder.appendingPathComponent("bad").path, "--loop-priority", "21"])
            #expect(bad.status != 0 && bad.stderr.contains("--loop-priority is 0 to 20 nice levels"), "\(bad.stderr)")
        }
        #endif
    }

    /// Each thread of process `pid`: its kernel ID, name and nice value (`/proc/PID/task/ID/stat`: the name in
    /// parentheses, then fields from the state on; nice is the 19th field of the line).
    static func threads(of pid: Int32) -> [(id: Int32, name: String, nice: Int32)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.compactMap { task in
            guard let id = Int32(task), let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8),
                  let open = stat.firstIndex(of: "("), let close = stat.lastIndex(of: ")") else { return nil }
            let fields = stat[stat.index(after: close)...].split(separator: " ")  // fields[0] is the state, the 3rd field
            guard fields.count > 16, let nice = Int32(fields[16]) else { return nil }
            return (id, String(stat[stat.index(after: open)..<close]), nice)
        }
    }
}
