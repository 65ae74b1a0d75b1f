import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Downloads over an emulated link instead of loopback: nginx runs in its own network namespace behind a
/// veth pair, `tc tbf` limits the rate of what it sends, and `scripts/delay-line.py` adds the round trip
/// (each chunk delivered half a round trip late in each direction, a connection's first bytes one more).
/// A third link caps every connection (nginx `limit_rate`), as CDNs that throttle per connection do.
///
/// Per link: the floor — one file of the asset's size on one connection through the same link, no
/// per-connection cap (the most any downloader can get, protocol overhead included) — then Satchel with
/// its default (adaptive) parallelism and fixed at 8, 16 and 32, aria2c -x16 -j16 (a segment list),
/// yt-dlp -N 8 and ffmpeg -c copy, best of `rounds`. The namespace is set up here and torn down on the way
/// out, also after a failure. Needs root, `ip`, `tc`, nginx, python3 and GNU time.
struct LinkBenchmark {
    struct Link {
        var name: String
        var rateMbit: Int
        var rttMilliseconds: Int
        /// nginx's limit_rate per connection, Mbit/s (nil: none).
        var perConnectionMbit: Int?
    }

    let links = [
        Link(name: "100 Mbit/s, RTT 40 ms", rateMbit: 100, rttMilliseconds: 40),
        Link(name: "100 Mbit/s, RTT 150 ms", rateMbit: 100, rttMilliseconds: 150),
        Link(name: "200 Mbit/s, 8 Mbit/s per connection, RTT 40 ms", rateMbit: 200, rttMilliseconds: 40, perConnectionMbit: 8),
    ]
    let rounds: Int
    let namespace = "satchel-link"
    let hostSide = "satl-h", originSide = "satl-o"
    let hostAddress = "10.199.0.1", originAddress = "10.199.0.2"
    let originPort = 18_491, delayPort = 18_492

    func run() async throws {
        let script = FileManager.default.currentDirectoryPath + "/scripts/delay-line.py"
        let missing = ["ip", "tc", "python3", "curl"].filter { Tool.output(["which", $0]) == nil }
        guard getuid() == 0, missing.isEmpty, FileManager.default.fileExists(atPath: script),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else {
            print("link benchmark skipped: needs root, ip, tc, python3, curl, GNU time and \(script) (run from the repository; missing: \(missing))")
            return
        }
        let (directory, site) = try DownloadBenchmark.workDirectory()
        let bytes = DownloadBenchmark.bytes(under: site.appendingPathComponent("short"))
        let segments = try FileManager.default.subpathsOfDirectory(atPath: site.appendingPathComponent("short").path).filter { $0.hasSuffix(".ts") }.count
        // The floor's file: as many bytes as the asset, sparse (nginx sends zeros).
        let floorFile = site.appendingPathComponent("floor.bin")
        _ = FileManager.default.createFile(atPath: floorFile.path, contents: nil)
        let handle = try FileHandle(forWritingTo: floorFile)
        try handle.truncate(atOffset: UInt64(bytes))
        try handle.close()

        tearDown()
        defer { tearDown() }
        try setUp()
        print("download over an emulated link: \(segments) segments, \(String(format: "%.1f", Double(bytes) / 1_048_576)) MB (HLS video + audio) from nginx in a network namespace; best of \(rounds) (ffmpeg: 1)")
        let base = "http://127.0.0.1:\(delayPort)"
        let list = directory.appendingPathComponent("aria2-link.txt")
        try DownloadBenchmark.segmentList(site: site.appendingPathComponent("short"), base: "\(base)/short").write(to: list, atomically: true, encoding: .utf8)
        let work = directory.appendingPathComponent("work")
        func fresh() -> String {
            try? FileManager.default.removeItem(at: work)
            try? FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            return work.path
        }
        let me = CommandLine.arguments[0], master = "\(base)/short/master.m3u8"
        var tools: [(name: String, rounds: Int, command: () -> [String])] = [
            ("satchel (default: 16, adaptive to 48)", rounds, { [me, "download-child", master, fresh(), "16", "48"] }),
        ]
        for fixed in [8, 16, 32] {
            tools.append(("satchel fixed \(fixed)", rounds, { [me, "download-child", master, fresh(), String(fixed)] }))
        }
        if Tool.output(["which", "aria2c"]) != nil {
            tools.append(("aria2c -x16 -j16 (list)", rounds, { ["aria2c", "-q", "-x16", "-j16", "--allow-overwrite=true", "-d", fresh(), "-i", list.path] }))
        } else {
            print("  aria2c: not installed (apt-get install aria2)")
        }
        if Tool.output(["which", "yt-dlp"]) != nil {
            tools.append(("yt-dlp -N 8", rounds, { ["yt-dlp", "-q", "--no-progress", "-N", "8", "-P", fresh(), "-o", "out.%(ext)s", master] }))
        }
        tools.append(("ffmpeg -c copy", 1, { ["ffmpeg", "-v", "error", "-i", master, "-map", "0", "-c", "copy", "-f", "mpegts", fresh() + "/out.ts"] }))

        for link in links {
            try shape(link)
            let nginx = try startNginx(link, site: site, directory: directory)
            let delay = DownloadBenchmark.spawn(["python3", script, String(delayPort), originAddress, String(originPort), String(link.rttMilliseconds)])
            defer {
                for pid in [nginx, delay].compactMap({ $0 }) {
                    kill(pid, SIGTERM)
                    var status: Int32 = 0
                    waitpid(pid, &status, 0)
                }
            }
            try await waitForOrigin(base)
            let nominal = Double(bytes) * 8 / (Double(link.rateMbit) * 1_000_000)
            let floor = DownloadBenchmark.measure(["curl", "-s", "-o", "/dev/null", "\(base)/floor.bin"])
            print("\n\(link.name): nominal \(String(format: "%.2f", nominal)) s (bytes / rate); floor \(String(format: "%.2f", floor.wall)) s (one connection, one file of the same size)")
            print("  tool                                   wall s   vs floor   CPU s   peak MB")
            for tool in tools {
                let errors = directory.appendingPathComponent("tool-stderr.txt").path
                var costs: [DownloadBenchmark.Cost] = []
                for _ in 0..<tool.rounds {
                    let cost = DownloadBenchmark.measure(tool.command(), errors: errors)
                    costs.append(cost)
                    if cost.status != 0 { print("  \(tool.name): a run failed (exit \(cost.status)): \(Self.tail(of: errors))") }
                }
                guard let best = costs.filter({ $0.status == 0 }).min(by: { $0.wall < $1.wall }) else {
                    print("  \(tool.name.padding(toLength: 38, withPad: " ", startingAt: 0))  failed")
                    continue
                }
                let over = (best.wall / max(floor.wall, 0.001) - 1) * 100
                print(String(format: "  %@ %7.2f  %+7.0f %%  %6.2f  %8.1f", tool.name.padding(toLength: 38, withPad: " ", startingAt: 0),
                             best.wall, over, best.cpu, Double(best.peakKB) / 1024))
            }
        }
    }

    /// The last lines a failed run wrote on stderr.
    static func tail(of path: String) -> String {
        let lines = ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline)
        return lines.suffix(4).joined(separator: " | ")
    }

    private func setUp() throws {
        let steps: [[String]] = [
            ["ip", "netns", "add", namespace],
            ["ip", "link", "add", hostSide, "type", "veth", "peer", "name", originSide],
            ["ip", "link", "set", originSide, "netns", namespace],
            ["ip", "addr", "add", "\(hostAddress)/24", "dev", hostSide],
            ["ip", "link", "set", hostSide, "up"],
            ["ip", "netns", "exec", namespace, "ip", "addr", "add", "\(originAddress)/24", "dev", originSide],
            ["ip", "netns", "exec", namespace, "ip", "link", "set", originSide, "up"],
            ["ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up"],
        ]
        for step in steps {
            guard Tool.output(step) != nil else { throw BenchmarkError(message: "cannot set up the link: \(step.joined(separator: " ")) failed") }
        }
    }

    /// Limits what the origin sends to the link's rate; the queue holds 50 ms of it (a deeper one only adds delay).
    private func shape(_ link: Link) throws {
        let command = ["ip", "netns", "exec", namespace, "tc", "qdisc", "replace", "dev", originSide, "root", "tbf",
                       "rate", "\(link.rateMbit)mbit", "burst", "256kb", "latency", "50ms"]
        guard Tool.output(command) != nil else { throw BenchmarkError(message: "tc tbf failed") }
    }

    private func tearDown() {
        _ = Tool.output(["ip", "netns", "del", namespace])  // removes the origin's end of the pair, and so the pair
        _ = Tool.output(["ip", "link", "del", hostSide])
    }

    private func startNginx(_ link: Link, site: URL, directory: URL) throws -> pid_t {
        let cap = link.perConnectionMbit.map { "limit_rate \($0 * 125)k; location = /floor.bin { limit_rate 0; }" } ?? ""
        let config = directory.appendingPathComponent("nginx-link.conf")
        try DownloadBenchmark.nginxConfiguration(site: site, directory: directory, listen: "\(originAddress):\(originPort)", name: "nginx-link",
                                                 server: cap).write(to: config, atomically: true, encoding: .utf8)
        guard let pid = DownloadBenchmark.spawn(["ip", "netns", "exec", namespace] + DownloadBenchmark.nginxCommand(config: config, directory: directory)) else {
            throw BenchmarkError(message: "nginx did not start in the namespace")
        }
        return pid
    }

    /// Waits until the origin answers through the delay line (at most 10 s).
    private func waitForOrigin(_ base: String) async throws {
        for _ in 0..<100 {
            if Tool.output(["curl", "-sf", "-o", "/dev/null", "\(base)/short/master.m3u8"]) != nil { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw BenchmarkError(message: "the origin did not answer through the delay line")
    }
}
