import Foundation
import Logging
import SatchelDownloads
import SatchelPackager
#if canImport(Glibc)
import Glibc
#endif

/// Downloading one HLS asset (≥ 200 segments, video and audio renditions) from nginx on loopback with
/// Satchel and, in the same run, yt-dlp -N 8, ffmpeg -c copy and aria2c -x16 -j16 (a segment list):
/// wall time, CPU time and peak memory of each, every tool in its own process. Then Satchel again on an
/// asset four times as long, to show its peak memory does not grow with the asset.
struct DownloadBenchmark {
    let port = 18_481

    /// A child process's cost.
    struct Cost {
        var wall: Double
        var cpu: Double
        var peakKB: Int
        var status: Int32
    }

    func run() async throws {
        guard Tool.output(["which", "nginx"]) != nil || FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx"),
              FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else {
            print("download benchmark skipped: needs nginx and GNU time (scripts/benchmark-downloads installs them with yt-dlp and aria2)")
            return
        }
        let (directory, site) = try Self.workDirectory()
        try makeAsset(named: "long", seconds: 200, loops: 4, site: site, directory: directory)
        let nginx = try startNginx(site: site, directory: directory)
        defer { kill(nginx, SIGTERM); var status: Int32 = 0; waitpid(nginx, &status, 0) }
        try await Task.sleep(for: .milliseconds(500))

        let base = "http://127.0.0.1:\(port)"
        let master = "\(base)/short/master.m3u8"
        let bytes = Self.bytes(under: site.appendingPathComponent("short"))
        let segments = try FileManager.default.subpathsOfDirectory(atPath: site.appendingPathComponent("short").path).filter { $0.hasSuffix(".ts") }.count
        print("download: \(segments) segments, \(String(format: "%.1f", Double(bytes) / 1_048_576)) MB (video + audio renditions) from nginx on loopback; best of 3 runs")
        print("  tool                          wall s    CPU s   peak MB")
        func report(_ name: String, _ costs: [Cost]) {
            guard let best = costs.filter({ $0.status == 0 }).min(by: { $0.wall < $1.wall }) else {
                print("  \(name.padding(toLength: 28, withPad: " ", startingAt: 0))  failed (exit \(costs.first?.status ?? -1))")
                return
            }
            print(String(format: "  %@ %7.2f  %7.2f  %8.1f", name.padding(toLength: 28, withPad: " ", startingAt: 0), best.wall, best.cpu, Double(best.peakKB) / 1024))
        }
        let work = directory.appendingPathComponent("work")
        func fresh() -> String {
            try? FileManager.default.removeItem(at: work)
            try? FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            return work.path
        }
        let me = CommandLine.arguments[0]
        // Every tool once per round, three rounds, best of three: machine noise (page-cache writeback above
        // all) hits every tool alike.
        var tools: [(name: String, command: () -> [String])] = [4, 8, 16].map { parallel in
            ("satchel (parallel \(parallel))", { [me, "download-child", master, fresh(), String(parallel)] })
        }
        if Tool.output(["which", "yt-dlp"]) != nil {
            tools.append(("yt-dlp -N 8", { ["yt-dlp", "-q", "--no-progress", "-N", "8", "-P", fresh(), "-o", "out.%(ext)s", master] }))
        } else {
            print("  yt-dlp: not installed (pip install yt-dlp)")
        }
        tools.append(("ffmpeg -c copy", { ["ffmpeg", "-v", "error", "-i", master, "-map", "0", "-c", "copy", "-f", "mpegts", fresh() + "/out.ts"] }))
        if Tool.output(["which", "aria2c"]) != nil {
            let list = directory.appendingPathComponent("aria2.txt")
            try Self.segmentList(site: site.appendingPathComponent("short"), base: "\(base)/short").write(to: list, atomically: true, encoding: .utf8)
            tools.append(("aria2c -x16 -j16 (list)", { ["aria2c", "-q", "-x16", "-j16", "--allow-overwrite=true", "-d", fresh(), "-i", list.path] }))
        } else {
            print("  aria2c: not installed (apt-get install aria2)")
        }
        let longSegments = try FileManager.default.subpathsOfDirectory(atPath: site.appendingPathComponent("long").path).filter { $0.hasSuffix(".ts") }.count
        tools.append(("satchel, \(longSegments) segments (4×)", { [me, "download-child", "\(base)/long/master.m3u8", fresh(), "8"] }))
        var costs = Array(repeating: [Cost](), count: tools.count)
        for _ in 0..<3 {
            for (index, tool) in tools.enumerated() { costs[index].append(Self.measure(tool.command())) }
        }
        for (index, tool) in tools.enumerated() { report(tool.name, costs[index]) }
    }

    /// The hidden child mode: downloads `url` into `directory` with the engine, as `satchel download` would.
    static func child(url: String, directory: String, parallelism: Int, maxParallelism: Int) async -> Int32 {
        do {
            var logger = Logger(label: "satchel.downloads")
            logger.logLevel = .warning  // retries and failures, on stderr (the suites show them when a run fails)
            let manager = try await DownloadManager(configuration: .init(dataDirectory: directory, rules: DownloadRules(headroom: 0), parallelism: parallelism,
                                                                         maxParallelism: maxParallelism, logger: logger),
                                                    environment: DownloadEnvironment(network: FixedNetwork.unmetered))
            try await manager.add(url: url, id: "bench")
            let summary = await manager.run()
            await manager.close()
            if !summary.allComplete { FileHandle.standardError.write(Data("download-child: not complete: \(summary)\n".utf8)) }
            return summary.allComplete ? 0 : 1
        } catch {
            FileHandle.standardError.write(Data("download-child: \(error)\n".utf8))
            return 1
        }
    }

    /// The download suites' folder and the site nginx serves, with the 200 s asset `short` packaged there (once).
    static func workDirectory() throws -> (directory: URL, site: URL) {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("satchel-download-bench")
        let site = directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("tmp"), withIntermediateDirectories: true)
        try DownloadBenchmark().makeAsset(named: "short", seconds: 200, loops: 1, site: site, directory: directory)
        return (directory, site)
    }

    func makeAsset(named name: String, seconds: Int, loops: Int, site: URL, directory: URL) throws {
        let output = site.appendingPathComponent(name)
        guard !FileManager.default.fileExists(atPath: output.appendingPathComponent("master.m3u8").path) else { return }
        let source = directory.appendingPathComponent("source-\(seconds).mp4")
        try Self.makeSource(source, seconds: seconds, videoBitrate: "3M")
        var input = source
        if loops > 1 {
            input = directory.appendingPathComponent("source-\(seconds)x\(loops).mp4")
            guard Tool.output(["ffmpeg", "-v", "error", "-y", "-stream_loop", "\(loops - 1)", "-i", source.path, "-c", "copy", input.path]) != nil else {
                throw BenchmarkError(message: "ffmpeg could not loop the source")
            }
        }
        _ = try Packager(options: PackageOptions(inputs: [input.path], output: output.path, format: .hlsTS, scheme: .clear, segmentDuration: 1)).run()
    }

    /// A 720p H.264/AAC test picture and tone of `seconds` at `path`, made with ffmpeg once (kept between runs).
    static func makeSource(_ path: URL, seconds: Int, videoBitrate: String) throws {
        guard !FileManager.default.fileExists(atPath: path.path) else { return }
        guard Tool.output(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=25:duration=\(seconds)",
                           "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)",
                           "-c:v", "libx264", "-preset", "ultrafast", "-b:v", videoBitrate, "-g", "25", "-pix_fmt", "yuv420p",
                           "-c:a", "aac", "-b:a", "128k", path.path]) != nil else { throw BenchmarkError(message: "ffmpeg could not make the source") }
    }

    private func startNginx(site: URL, directory: URL) throws -> pid_t {
        let config = directory.appendingPathComponent("nginx.conf")
        try Self.nginxConfiguration(site: site, directory: directory, listen: "127.0.0.1:\(port)", name: "nginx")
            .write(to: config, atomically: true, encoding: .utf8)
        guard let pid = Self.spawn(Self.nginxCommand(config: config, directory: directory)) else { throw BenchmarkError(message: "nginx did not start") }
        return pid
    }

    /// nginx serving `site` on `listen` with keep-alive and sendfile; `server` adds directives to the server block.
    static func nginxConfiguration(site: URL, directory: URL, listen: String, name: String, server: String = "") -> String {
        """
        worker_processes 2;
        daemon off;
        pid \(directory.path)/\(name).pid;
        error_log \(directory.path)/\(name)-error.log;
        \(getuid() == 0 ? "user root;" : "")
        events { worker_connections 1024; }
        http {
            access_log off;
            sendfile on;
            tcp_nopush on;
            keepalive_requests 100000;
            types { application/vnd.apple.mpegurl m3u8; video/mp2t ts; application/octet-stream key; }
            client_body_temp_path \(directory.path)/tmp;
            proxy_temp_path \(directory.path)/tmp;
            fastcgi_temp_path \(directory.path)/tmp;
            uwsgi_temp_path \(directory.path)/tmp;
            scgi_temp_path \(directory.path)/tmp;
            server { listen \(listen); root \(site.path); \(server) }
        }
        """
    }

    /// The command line that runs nginx in the foreground with `config`.
    static func nginxCommand(config: URL, directory: URL) -> [String] {
        [FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx") ? "/usr/sbin/nginx" : "nginx", "-c", config.path, "-p", directory.path]
    }

    /// An aria2c input file: every segment and playlist, each with its output path.
    static func segmentList(site: URL, base: String) throws -> String {
        try FileManager.default.subpathsOfDirectory(atPath: site.path).sorted().filter { $0.hasSuffix(".ts") || $0.hasSuffix(".m3u8") }
            .map { "\(base)/\($0)\n  out=\($0)" }.joined(separator: "\n") + "\n"
    }

    static func bytes(under url: URL) -> Int {
        let paths = (try? FileManager.default.subpathsOfDirectory(atPath: url.path)) ?? []
        return paths.reduce(0) { $0 + ((try? FileManager.default.attributesOfItem(atPath: url.appendingPathComponent($1).path)[.size] as? Int) ?? 0) }
    }

    static func spawn(_ arguments: [String], errors: String = "/dev/null") -> pid_t? {
        var pid: pid_t = 0
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        // The child starts with no signal blocked: this process's threads block some, and a child that inherits
        // a blocked SIGTERM (python3) would never end when told to.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), defaults = sigset_t()
        sigemptyset(&none)
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        guard posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ) == 0 else { return nil }
        return pid
    }

    /// Runs a command to the end under GNU time: wall time, user + system CPU time (children included) and
    /// peak resident memory. GNU time forks from its own small process, so the figure is the tool's, not
    /// this benchmark's (a child spawned straight from here would inherit this process's high-water mark).
    /// What the command wrote on stderr goes to `errors`.
    static func measure(_ arguments: [String], errors: String = "/dev/null") -> Cost {
        let report = NSTemporaryDirectory() + "satchel-bench-time-\(getpid())"
        guard let pid = spawn(["/usr/bin/time", "-f", "%e %U %S %M %x", "-o", report] + arguments, errors: errors) else {
            return Cost(wall: 0, cpu: 0, peakKB: 0, status: -1)
        }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        let fields = ((try? String(contentsOfFile: report, encoding: .utf8)) ?? "").split(whereSeparator: \.isNewline).last?
            .split(separator: " ").compactMap { Double($0) } ?? []
        guard fields.count == 5 else { return Cost(wall: 0, cpu: 0, peakKB: 0, status: -1) }
        return Cost(wall: fields[0], cpu: fields[1] + fields[2], peakKB: Int(fields[3]), status: Int32(fields[4]))
    }
}
