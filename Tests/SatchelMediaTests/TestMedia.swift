import Foundation
import Testing

/// Test media made with ffmpeg at test time (testsrc2 video, sine audio); never committed.
enum TestMedia {
    static let directory: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-media-\(ProcessInfo.processInfo.processIdentifier)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// Runs a tool and returns its standard output; throws with its standard error on failure.
    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ToolError(message: "\(tool) failed: \(String(decoding: error, as: UTF8.self).suffix(600))")
        }
        return String(decoding: output, as: UTF8.self)
    }

    struct ToolError: Error, CustomStringConvertible { let message: String; var description: String { message } }

    /// An H.264 + AAC file; `name` keys a cache so each variant is made once per run.
    static func make(_ name: String, seconds: Int = 6, size: String = "320x240", rate: Int = 25, extra: [String] = [],
                     audio: Bool = true, video: Bool = true, container: String = "mp4") throws -> URL {
        let url = directory.appendingPathComponent("\(name).\(container)")
        if FileManager.default.fileExists(atPath: url.path) { return url }
        var arguments = ["-v", "error", "-y"]
        if video { arguments += ["-f", "lavfi", "-i", "testsrc2=size=\(size):rate=\(rate):duration=\(seconds)"] }
        if audio { arguments += ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)"] }
        if video { arguments += ["-c:v", "libx264", "-preset", "veryfast", "-g", "\(rate * 2)", "-pix_fmt", "yuv420p"] }
        if audio { arguments += ["-c:a", "aac", "-b:a", "96k", "-ac", "2"] }
        arguments += extra + [url.path]
        try run("ffmpeg", arguments)
        return url
    }

    /// Per-stream packet counts from ffprobe.
    static func packetCounts(_ url: URL) throws -> [String: Int] {
        let out = try run("ffprobe", ["-v", "error", "-count_packets", "-show_entries", "stream=codec_type,nb_read_packets", "-of", "csv=p=0", url.path])
        var counts: [String: Int] = [:]
        for line in out.split(separator: "\n") {
            let parts = line.split(separator: ",")
            if parts.count == 2, let n = Int(parts[1]) { counts[String(parts[0]), default: 0] += n }
        }
        return counts
    }

    static func bytes(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }
}
