import Foundation
import SatchelTestSupport
import Testing

/// `scripts/hang-watch`, which `scripts/test` runs beside the tests: a run in which no test starts or ends for a while
/// is stopped, naming the tests still running.
@Suite("The test run's hang watch")
struct HangWatchTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("a stand-in test process whose event stream goes quiet is killed, and the report names the test still running, not the one that ended")
    func quietRunStopped() async throws {
        let directory = try TestMedia.temporaryDirectory("hang-watch")
        defer { try? FileManager.default.removeItem(at: directory) }
        // The stand-in: a shell named like a test binary, its command line naming this event stream (as swift test's
        // child names the run's own, which is another file: the real test process is never a match).
        let standIn = directory.appendingPathComponent("StandIn.xctest")
        try FileManager.default.copyItem(at: URL(fileURLWithPath: "/bin/bash"), to: standIn)
        let events = directory.appendingPathComponent("events.jsonl")
        let now = Date().timeIntervalSince1970
        let lines = [
            #"{"kind":"test","payload":{"id":"M.S/hangs()","displayName":"a test that hangs"},"version":0}"#,
            #"{"kind":"test","payload":{"id":"M.S/ends()","displayName":"a test that ended"},"version":0}"#,
            #"{"kind":"event","payload":{"kind":"testStarted","testID":"M.S/hangs()","instant":{"since1970":\#(now)}},"version":0}"#,
            #"{"kind":"event","payload":{"kind":"testStarted","testID":"M.S/ends()","instant":{"since1970":\#(now)}},"version":0}"#,
            #"{"kind":"event","payload":{"kind":"testEnded","testID":"M.S/ends()","instant":{"since1970":\#(now + 1)}},"version":0}"#,
        ]
        try (lines.joined(separator: "\n") + "\n").write(to: events, atomically: true, encoding: .utf8)
        let started = try await ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"),
                                                  ["-c", #""$0" -c 'sleep 600; true' "$1" >/dev/null 2>&1 & echo $!"#, standIn.path, events.path])
        let pid = try #require(Int32(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let report = directory.appendingPathComponent("hang.txt")
        let watch = try await ProcessRunner.run(Self.root.appendingPathComponent("scripts/hang-watch"),
                                                [events.path, report.path, "--quiet-minutes", "0.05"])
        #expect(watch.status == 1, "\(watch.stderr)")
        let text = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
        #expect(text.contains("a test that hangs") && !text.contains("a test that ended"), "\(text)")
        // Killed: gone, or a zombie no one reaps (its parent, the shell, has exited).
        let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        #expect(stat.isEmpty || stat.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") == true, "\(stat)")
        if !stat.isEmpty { kill(pid, SIGKILL) }
    }
}
