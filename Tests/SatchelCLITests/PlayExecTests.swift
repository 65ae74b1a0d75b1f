import Foundation
import SatchelTestSupport
import Testing

/// `satchel play --exec`: the player command runs without a shell, the session URL reaches it as one argument
/// whatever the origin named its files (the quote-in-URL attack, directly, after a redirect, and in a downloaded
/// asset), the player starts with no signal blocked or ignored, and stopping `satchel` stops the player and
/// everything it started.
@Suite(.serialized) struct PlayExecTests {
    /// The name the attack gave the playlist: a quote closes the old shell quoting, `;` starts a command.
    static let hostile = "a';touch PWNED;echo '.m3u8"

    /// An origin serving a clear HLS package under `x/`, its master playlist also under the hostile name.
    static func stage(_ name: String) async throws -> (origin: TestOrigin, work: URL) {
        try TestMedia.require("ffmpeg")
        let work = try TestMedia.temporaryDirectory("exec-\(name)")
        let site = work.appendingPathComponent("site")
        let input = try await TestMedia.offloaded { try TestMedia.make("exec-input", seconds: 2) }
        try await TestMedia.offloaded {
            let packaged = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("x").path, "--format", "hls-ts", "--segment-duration", "1"])
            #expect(packaged.status == 0, "\(packaged.stderr)")
        }
        try FileManager.default.copyItem(at: site.appendingPathComponent("x/master.m3u8"), to: site.appendingPathComponent("x/" + hostile))
        return (try await TestOrigin.start(root: site), work)
    }

    /// Runs `satchel ARGUMENTS` in `directory`.
    static func run(_ arguments: [String], in directory: URL) throws -> ProcessRunner.Result {
        try ProcessRunner.run(try #require(CLIRunner.binary), arguments, directory: directory)
    }

    /// The URL as the attack wrote it: the quote and `;` as they are, blanks encoded.
    static func attackURL(_ origin: TestOrigin, _ name: String = hostile) -> String {
        origin.url("x/" + name.replacingOccurrences(of: " ", with: "%20"))
    }

    /// Checks one `play … --exec "printf '<%s>\n' {url}"` run: the player printed the session URL as one argument,
    /// made only of the proxy's characters, and no command of the attack ran.
    static func expectOneArgument(_ result: ProcessRunner.Result, in directory: URL, _ label: String) {
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(result.status == 0, "\(label): \(result.stderr)")
        #expect(lines.count == 2 && lines.count == 2 && lines[1] == "<\(lines[0])>", "\(label): \(lines)")
        let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/:%")
        #expect(lines.first.map { $0.unicodeScalars.allSatisfy(allowed.contains) } == true, "\(label): \(lines.first ?? "")")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("PWNED").path), "\(label): the attack's command ran")
    }

    @Test("a quote in the played URL, in a redirect's target, or in a downloaded asset's playlist name runs no command: the player gets the session URL as one argument")
    func quoteInURL() async throws {
        let (origin, work) = try await Self.stage("quote")
        defer { origin.stop() }
        let exec = "printf '<%s>\\n' {url}"
        try await TestMedia.offloaded {
            Self.expectOneArgument(try Self.run(["play", Self.attackURL(origin), "--exec", exec], in: work), in: work, "direct")
            origin.inject(.redirect("/x/" + Self.hostile.replacingOccurrences(of: " ", with: "%20")), on: "x/r.m3u8", times: 10)
            Self.expectOneArgument(try Self.run(["play", origin.url("x/r.m3u8"), "--exec", exec], in: work), in: work, "redirect")
            let data = work.appendingPathComponent("data").path
            #expect(try Self.run(["download", "add", Self.attackURL(origin), "--data-dir", data, "--id", "q"], in: work).status == 0)
            #expect(try Self.run(["download", "run", "--data-dir", data], in: work).status == 0)
            Self.expectOneArgument(try Self.run(["play", "q", "--data-dir", data, "--exec", exec], in: work), in: work, "downloaded")
            // Quotes in the command itself group words, as a shell would; nothing else is interpreted.
            let grouped = try Self.run(["play", "q", "--data-dir", data, "--exec", "printf '[%s]' 'two words' \"a;b\" $HOME {url}"], in: work)
            #expect(grouped.stdout.contains("[two words][a;b][$HOME][http://127.0.0.1:"), "\(grouped.stdout)")
            let unclosed = try Self.run(["play", "q", "--data-dir", data, "--exec", "printf 'x"], in: work)
            #expect(unclosed.status != 0 && unclosed.stderr.contains("--exec: a quote is not closed"), "\(unclosed.stderr)")
        }
    }

    @Test("the player starts with an empty signal mask and no signal ignored, whatever satchel's threads block")
    func cleanSignalMask() async throws {
        let (origin, work) = try await Self.stage("mask")
        defer { origin.stop() }
        let result = try await TestMedia.offloaded {
            try Self.run(["play", origin.url("x/master.m3u8"), "--exec", "grep -E ^Sig(Blk|Ign) /proc/self/status"], in: work)
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("SigBlk:\t0000000000000000") && result.stdout.contains("SigIgn:\t0000000000000000"), "\(result.stdout)")
    }

    @Test("the player gets stdin, stdout and stderr and no other descriptor of satchel's: not the proxy's listening socket, its event loops' descriptors or a pipe")
    func onlyStandardDescriptors() async throws {
        let (origin, work) = try await Self.stage("descriptors")
        defer { origin.stop() }
        let result = try await TestMedia.offloaded {
            try Self.run(["play", origin.url("x/master.m3u8"), "--exec", "ls -l /proc/self/fd"], in: work)
        }
        #expect(result.status == 0, "\(result.stderr)")
        // ls's own listing of /proc/self/fd is the one descriptor past stderr it may hold.
        let inherited = result.stdout.split(separator: "\n").filter { line in
            guard let arrow = line.range(of: " -> ") else { return false }
            let number = line[..<arrow.lowerBound].split(separator: " ").last.flatMap { Int($0) } ?? -1
            return number > 2 && !line[arrow.upperBound...].hasPrefix("/proc/")
        }
        #expect(inherited.isEmpty && result.stdout.contains(" 0 -> "), "the player inherited: \(inherited)")
    }

    @Test("SIGTERM to satchel play ends the player's whole process group (the player and what it started) before satchel exits")
    func stopTakesThePlayer() async throws {
        let (origin, _) = try await Self.stage("stop")
        defer { origin.stop() }
        let marker = "\(Int.random(in: 100_000...999_999))"
        try await TestMedia.offloaded { () throws -> Void in
            // The "player" starts a helper of its own, then waits.
            let player = try PlayCommandTests.Player([origin.url("x/master.m3u8"), "--exec", "sh -c 'sleep 3\(marker) & exec sleep 4\(marker)'"])
            func running() throws -> [String] {
                try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/pgrep"), ["-f", "^sleep [34]\(marker)"]).stdout.split(separator: "\n").map(String.init)
            }
            for _ in 0..<50 where try running().count < 2 { Thread.sleep(forTimeInterval: 0.1) }
            #expect(try running().count == 2)
            player.process.terminate()  // SIGTERM to satchel alone
            player.process.waitUntilExit()
            for _ in 0..<50 where try !running().isEmpty { Thread.sleep(forTimeInterval: 0.1) }
            #expect(try running().isEmpty, "the player or its helper outlived satchel")
            #expect(player.process.terminationStatus == 143, "satchel exits with the player's status: SIGTERM")
        }
    }

    @Test("a stop signal sent the moment the session URL is printed still closes the session: satchel play exits 0 with the close reported, every time",
          .timeLimit(.minutes(3)))
    func stopRightAfterTheURL() async throws {
        let (origin, work) = try await Self.stage("early-stop")
        defer { origin.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            for round in 0..<20 {
                let stopped = try EarlyStop.run(["play", origin.url("x/master.m3u8")], in: work)
                #expect(stopped.line.hasPrefix("http://127.0.0.1:"), "round \(round): \(stopped.stderr)")
                #expect(stopped.exited && stopped.status == 0, "round \(round): killed by the signal (\(stopped.status))")
                #expect(stopped.stderr.contains("event: closed: "), "round \(round): \(stopped.stderr)")
            }
        }
    }
}

/// A `satchel` process stopped the instant its first line is out: blocking reads of its stdout, then SIGTERM (a
/// command that says it is ready must already catch stop signals by then).
enum EarlyStop {
    /// Runs `satchel ARGUMENTS` in `directory`, sends SIGTERM once its first whole line has come (SIGKILL when none
    /// comes within a minute), waits for its end.
    static func run(_ arguments: [String], in directory: URL? = nil) throws -> (line: String, exited: Bool, status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = CLIRunner.binary
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // One that never says a line is killed after a minute: the read ends, and the caller's checks say so.
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)  // blocking-ok: a timer that only sends a signal
        defer { watchdog.cancel() }
        var line = [UInt8](), byte: UInt8 = 0
        while line.last != UInt8(ascii: "\n"), read(output.fileHandleForReading.fileDescriptor, &byte, 1) == 1 { line.append(byte) }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (String(decoding: line.filter { $0 != UInt8(ascii: "\n") }, as: UTF8.self), process.terminationReason == .exit, process.terminationStatus, said)
    }
}
