import Foundation
import SatchelBytes
import SatchelSystem
import SatchelTestSupport
import Testing

/// `scripts/stall-report`, which `scripts/test` runs after the tests: a stall's stacks (frames as the watchdog's
/// sampler writes them) are printed with each frame's function and file.
@Suite("The test run's stall report")
struct StallReportTests {
    #if os(Linux)
    @Test("a stall's stack sampled from a running thread is printed with its Swift function and file; an address outside every image stays as it is")
    func stacksNamed() async throws {
        let directory = try TestMedia.temporaryDirectory("stall-report")
        defer { try? FileManager.default.removeItem(at: directory) }
        let running = Locked(true), handle = Locked<UInt?>(nil)
        let thread = Thread {
            handle.withLock { $0 = UInt(pthread_self()) }
            while running.current { _ = Self.spin() }
        }
        thread.start()
        defer { running.withLock { $0 = false } }
        for _ in 0..<100 where handle.current == nil { try await Task.sleep(for: .milliseconds(10)) }
        let sampled = try #require(handle.current)
        let frames = try #require(StackSampler.sample(thread: sampled), "the running thread answered the sampler")
        let stall: [String: Any] = ["source": "event loop #1", "milliseconds": 400, "since": Date().timeIntervalSince1970, "threads": [[String: Any]](),
                                    "cause": "busy", "stacks": [["thread": "NIO-ELT-0-#1", "frames": frames + ["0x12345"]]]]
        let stalls = directory.appendingPathComponent("stalls.jsonl"), events = directory.appendingPathComponent("events.jsonl")
        try (JSONSerialization.data(withJSONObject: stall) + Data("\n".utf8)).write(to: stalls)
        try Data().write(to: events)
        let report = try await ProcessRunner.run(HangWatchTests.root.appendingPathComponent("scripts/stall-report"), [stalls.path, events.path, "--enforce"])
        #expect(report.status == 1, "a stall past the limit fails the run: \(report.stderr)")
        #expect(report.stdout.contains("stack of NIO-ELT-0-#1, running (1 of 1 samples)"), "\(report.stdout)")
        #expect(report.stdout.contains("StallReportTests.spin()") && report.stdout.contains("StallReportTests.swift:"), "\(report.stdout)")
        #expect(report.stdout.contains("    0x12345"), "\(report.stdout)")
        #expect(frames.allSatisfy { $0.hasPrefix("/") }, "every frame in an image, the shared libraries' too (libc's signal return first): \(frames)")
    }
    #endif

    /// A little work the sampled thread is found in.
    @inline(never)
    static func spin() -> Int {
        var total = 0
        for index in 0..<100_000 { total &+= index &* 31 }
        return total
    }
}
