import Foundation
import SatchelBytes

/// Where log lines are written from: a bounded queue drained by one thread of its own, so a log call on an event loop
/// or in the task pool never waits for a `write()` (a slow disk, a full pipe, another process's lock on a shared file).
/// When the queue is full the oldest lines are dropped and counted; the next lines written say how many were lost.
package final class LogWriter: @unchecked Sendable {
    /// A line and where it goes.
    package struct Entry: Sendable {
        /// The line, without its newline.
        package var line: String
        /// Whether it goes to standard error.
        package var standardError: Bool
        /// The file it is appended to, if any.
        package var file: RotatingLogFile?

        /// An entry.
        package init(line: String, standardError: Bool, file: RotatingLogFile?) {
            (self.line, self.standardError, self.file) = (line, standardError, file)
        }
    }

    /// Lines waiting, at most.
    package static let defaultCapacity = 10_000
    /// The writer every ``SatchelLogHandler`` uses.
    package static let shared = LogWriter()

    private let capacity: Int
    private let write: @Sendable ([Entry]) -> Void
    private let condition = NSCondition()
    // Guarded by `condition`: a ring of waiting entries, the lines dropped since the last notice, whether a batch is being written.
    private var ring: [Entry?]
    private var head = 0
    private var count = 0
    private var dropped = 0
    private var droppedInAll = 0
    private var writing = false
    private var thread: Thread?

    /// A writer holding at most `capacity` lines, handing batches to `write` on its own thread (by default: standard
    /// error in one `write()` per batch, each file its lines).
    package init(capacity: Int = defaultCapacity, write: @escaping @Sendable ([Entry]) -> Void = LogWriter.deliver) {
        self.capacity = max(1, capacity)
        self.write = write
        ring = Array(repeating: nil, count: self.capacity)
    }

    /// Queues `entry` and returns at once (never blocks on I/O); the oldest waiting line goes when the queue is full.
    package func enqueue(_ entry: Entry) {
        condition.lock()
        if thread == nil { start() }
        if count == capacity {
            ring[head] = nil
            head = (head + 1) % capacity
            count -= 1
            dropped += 1
            droppedInAll += 1
        }
        ring[(head + count) % capacity] = entry
        count += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Lines dropped since the writer started because the queue was full.
    package var droppedLines: Int {
        condition.lock()
        defer { condition.unlock() }
        return droppedInAll
    }

    /// Waits until every queued line is written, at most `timeout` (at exit, so a command's last lines are not lost).
    package func flush(timeout: TimeInterval = 2) {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        while count > 0 || writing {
            if !condition.wait(until: deadline) { break }
        }
        condition.unlock()
    }

    /// Starts the writer's thread (with `condition` held).
    private func start() {
        let thread = Thread { [self] in run() }
        thread.name = "satchel-log"
        self.thread = thread
        thread.start()
    }

    private func run() {
        while true {
            condition.lock()
            while count == 0 { condition.wait() }
            var batch: [Entry] = []
            batch.reserveCapacity(count + 1)
            let lost = dropped
            if lost > 0, let first = ring[head] {
                batch.append(Entry(line: "\(lost) log line(s) dropped: the log could not keep up", standardError: first.standardError, file: first.file))
            }
            while count > 0 {
                if let entry = ring[head] { batch.append(entry) }
                ring[head] = nil
                head = (head + 1) % capacity
                count -= 1
            }
            dropped = 0
            writing = true
            condition.unlock()
            write(batch)
            condition.lock()
            writing = false
            condition.broadcast()
            condition.unlock()
        }
    }

    /// The default destination: standard error's lines in one write, each file's appended.
    package static let deliver: @Sendable ([Entry]) -> Void = { batch in
        var standardError = Data()
        for entry in batch {
            if entry.standardError { standardError.append(contentsOf: Array((entry.line + "\n").utf8)) }
            entry.file?.append(entry.line)
        }
        if !standardError.isEmpty { FileHandle.standardError.write(standardError) }
    }
}
