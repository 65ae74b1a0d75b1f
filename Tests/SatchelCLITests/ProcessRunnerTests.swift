import Foundation
import SatchelTestSupport
import Testing

/// Issue 48: a child process a test waits for never holds a thread of the task pool, and runs below the test process.
@Suite("Test processes")
struct ProcessRunnerTests {
    @Test("a child process waited for on a task's thread fails the test, naming the tool; through the async overload it runs on a thread of its own, at nice 10 above the test process")
    func offThePool() async throws {
        try withKnownIssue("waited for on a task's thread") {
            _ = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["true"])
        } matching: { issue in
            issue.comments.contains { $0.rawValue.hasPrefix("true was waited for on a thread of the task pool") }
        }
        let result = try await ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["nice"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Int32(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) == min(19, getpriority(Int32(PRIO_PROCESS.rawValue), 0) + 10),
                "the child's niceness: \(result.stdout)")
    }
}
