import Foundation
import SatchelTestSupport
import Testing

/// The commands of README and its pages in `docs/` are the ones that run: each example block is executed exactly as written.
@Suite("README", .serialized)  // the main job and the license service alone both listen on 8080
struct ReadmeTests {
    /// README.md and every page of `docs/`, one after the other: the examples' markers are unique across them.
    static func pages() throws -> String {
        let root = CLIRunner.packageRoot
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path).filter { $0.hasSuffix(".md") }.sorted()
        return try (["README.md"] + docs.map { "docs/" + $0 }).map { try String(contentsOf: root.appendingPathComponent($0), encoding: .utf8) }
            .joined(separator: "\n")
    }

    @Test("the examples run in order in one folder, as a newcomer runs them: each uses names of its own, so none damages another (the scale-out example, which needs a PostgreSQL database of yours, apart)",
          .timeLimit(.minutes(6)))
    func inOrder() async throws {
        for tool in ["ffmpeg", "curl", "openssl", "python3"] { try TestMedia.require(tool) }
        Self.requireFree([8081, 8082, 8083, 8084, 8085, 8086, 8089, 8090, 8091], "the examples in order")
        let markers = ["clip", "package-examples", "package-checks", "round-trip", "cpix", "download", "fairplay-offline", "play", "agent", "protect",
                       "dashboard", "backplane", "at-scale"]
        let script = try markers.map { try Self.block(after: "<!-- \($0) -->") }.joined(separator: "\n")
        let result = try await Self.run(script + "\necho every-example-ran\n", label: "readme-in-order")
        #expect(result.status == 0 && result.stdout.contains("every-example-ran"), "\(result.stderr.suffix(2000))")
        #expect(Self.decoderComplaints(result.stderr).isEmpty, "\(result.stderr.suffix(800))")
    }

    @Test("README is a newcomer's page: at most 250 lines, and it links every page of docs/ that holds examples")
    func readmeIsShort() throws {
        let root = CLIRunner.packageRoot
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 250)
        for page in try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path) where page.hasSuffix(".md") {
            let text = try String(contentsOf: root.appendingPathComponent("docs/" + page), encoding: .utf8)
            if text.contains("```sh") { #expect(readme.contains("(docs/\(page))"), "README does not link docs/\(page)") }
        }
    }

    /// The first ```sh block after `marker` in README.md or a page of `docs/`.
    static func block(after marker: String) throws -> String {
        let readme = try pages()
        let afterMarker = try #require(readme.range(of: marker).map { readme[$0.upperBound...] }, "README and docs/ have no \(marker)")
        let start = try #require(afterMarker.range(of: "```sh\n"))
        let body = afterMarker[start.upperBound...]
        let end = try #require(body.range(of: "\n```"))
        return String(body[..<end.lowerBound])
    }

    @Test("the round trip (package, register, serve, token, AES-128, Clear Key, FairPlay, play with ffmpeg) runs as written",
          .timeLimit(.minutes(3)))
    func roundTrip() async throws {
        for tool in ["ffmpeg", "curl", "python3", "bash"] { try TestMedia.require(tool) }
        for port in [8081, 8082] {
            #expect((try? RawConnection(port: port, timeout: 1)) == nil, "port \(port), which README's round trip uses, is taken")
        }
        let work = try TestMedia.temporaryDirectory("readme-key")
        // The test process's children may inherit a blocked SIGTERM: the wrapper's trap ends them with SIGKILL.
        let result = try await Self.run(try Self.tour("<!-- round-trip -->") + "\ncp movie.key \"\(work.path)/\"\n", label: "readme")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect(result.stdout.contains("registered 1 key for asset movie") && result.stdout.contains("base64url"))
        #expect(result.stdout.contains("\"type\":\"temporary\"") || result.stdout.contains("\"keys\""), "the Clear Key license was printed")
        #expect(result.stdout.contains("CKC opened: R1 matches"))
        #expect(result.stdout.contains("\nplayed\n"), "\(result.stderr.suffix(600))")
        #expect((try? Data(contentsOf: work.appendingPathComponent("movie.key")).count) == 16)  // blocking-ok: README, read once
    }

    /// The clip block (a directory beside the checkout, `in.mp4` made there) followed by the example after `marker`:
    /// what a reader who follows "Trying the commands" runs.
    static func tour(_ marker: String) throws -> String {
        try block(after: "<!-- clip -->") + "\n" + block(after: marker)
    }

    /// Checks that every port an example listens on is free, so a failure names the port rather than a refused bind.
    static func requireFree(_ ports: [Int], _ example: String) {
        for port in ports {
            #expect((try? RawConnection(port: port, timeout: 1)) == nil, "port \(port), which README's \(example) uses, is taken")
        }
    }

    /// ffmpeg's complaints about what it decoded (each names its decoder's context, ` @ 0x…`).
    static func decoderComplaints(_ stderr: String) -> [Substring] {
        stderr.split(separator: "\n").filter { $0.contains(" @ 0x") }
    }

    /// Runs `script` with bash in a fresh directory beside `shared/`, with the built `satchel` first on the PATH.
    static func run(_ script: String, label: String) async throws -> ProcessRunner.Result {
        let binary = try #require(CLIRunner.binary, "the satchel binary was not built")
        let root = try TestMedia.temporaryDirectory(label)
        let work = root.appendingPathComponent("work")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("shared"),
                                                   withDestinationURL: CLIRunner.packageRoot.deletingLastPathComponent().appendingPathComponent("shared"))
        let file = root.appendingPathComponent("script.sh")  // the wrapper's trap ends leftover children with SIGKILL
        try ("set -euo pipefail\ntrap 'kill -9 $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true' EXIT\ncd \"\(work.path)\"\n"
             + "export PATH=\"\(binary.deletingLastPathComponent().path):$PATH\"\n" + script + "\n").write(to: file, atomically: true, encoding: .utf8)
        return try await TestMedia.offloaded { try ProcessRunner.run(URL(fileURLWithPath: "/bin/bash"), [file.path]) }
    }

    @Test("the download example (a package on a plain web server, add with a readable ID, run, list, play from disk) runs as written",
          .timeLimit(.minutes(3)))
    func downloadExample() async throws {
        for tool in ["ffmpeg", "curl", "python3"] { try TestMedia.require(tool) }
        Self.requireFree([8084], "download example")
        let result = try await Self.run(try Self.tour("<!-- download -->"), label: "readme-download")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect(result.stdout.contains("movie\thls\t"), "the asset's ID comes from the playlist's folder: \(result.stdout)")
        #expect((result.stdout + result.stderr).contains("movie: complete") && result.stdout.contains("movie\thls\tcomplete\t100%"), "\(result.stdout)")
        #expect(Self.decoderComplaints(result.stderr).isEmpty, "\(result.stderr.suffix(800))")
    }

    @Test("the FairPlay offline example (a SAMPLE-AES package signalled for FairPlay, a persistable key asked for with an SPC of the software client, downloaded, played offline, removed) runs as written",
          .timeLimit(.minutes(3)))
    func fairPlayOfflineExample() async throws {
        for tool in ["ffmpeg", "curl", "python3"] { try TestMedia.require(tool) }
        Self.requireFree([8090, 8091], "FairPlay offline example")
        let result = try await Self.run(try Self.tour("<!-- fairplay-offline -->"), label: "readme-fairplay")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect((result.stdout + result.stderr).contains("fps-movie: complete"), "\(result.stdout)")
        #expect(Self.decoderComplaints(result.stderr).isEmpty, "\(result.stderr.suffix(800))")
    }

    @Test("the play example (a cenc package online as HLS with a license for the token, then downloaded with a persistent license and played from disk) runs as written",
          .timeLimit(.minutes(3)))
    func playExample() async throws {
        for tool in ["ffmpeg", "curl"] { try TestMedia.require(tool) }
        Self.requireFree([8085], "play example")
        let result = try await Self.run(try Self.tour("<!-- play -->"), label: "readme-play")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        let sessions = result.stdout.split(separator: "\n").filter { $0.hasPrefix("http://127.0.0.1:") }
        #expect(sessions.count == 2 && sessions.first?.hasSuffix("/.hls/master.m3u8") == true, "online DASH is played as HLS: \(result.stdout)")
        #expect(result.stderr.contains("satchel: event: opened: film (cached 8.0 s of 8.0 s, ready to play)"), "\(result.stderr.suffix(800))")
        #expect(Self.decoderComplaints(result.stderr).isEmpty, "the player got clear media both times: \(result.stderr.suffix(800))")
    }

    @Test("the dashboard example runs as written, and its key signs in to a dashboard that lists the asset", .timeLimit(.minutes(3)))
    func dashboardExample() async throws {
        for tool in ["ffmpeg", "curl", "openssl"] { try TestMedia.require(tool) }
        Self.requireFree([8086], "dashboard example")
        let signIn = """
            ls -l operator.key | cut -c1-10
            curl -sf -c jar -o /dev/null --data-urlencode "key=$(cat operator.key)" http://127.0.0.1:8086/admin/login
            curl -sf -b jar http://127.0.0.1:8086/admin/assets | grep -c 'data-asset="show"' || true
            """
        let result = try await Self.run(try Self.tour("<!-- dashboard -->") + "\n" + signIn, label: "readme-dashboard")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("-rw-------"), "the operator key is private to its owner: \(lines)")
        #expect(lines.contains("Open http://127.0.0.1:8086/admin and sign in with the key in operator.key"))
        #expect(lines.last.flatMap { Int($0) }.map { $0 > 0 } == true, "signed in, the assets page lists show: \(result.stdout)")
    }

    @Test("the at-scale example runs as written: a catalogue imported twice (replaced, not doubled), a page, the next page, every page as JSON Lines",
          .timeLimit(.minutes(3)))
    func atScaleExample() async throws {
        try TestMedia.require("python3")
        let result = try await Self.run(try Self.block(after: "<!-- at-scale -->"), label: "readme-at-scale")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasPrefix("imported 2000 keys of 1000 assets") }.count == 2, "\(lines.prefix(3))")
        #expect(lines.dropFirst(2).prefix(5).allSatisfy { $0.hasPrefix("title-000") } && lines.count == 9, "\(lines)")
        #expect(lines[7].hasPrefix("title-0002\t"), "the next page goes on after the first: \(lines)")
        #expect(lines.last?.trimmingCharacters(in: .whitespaces) == "2000", "every key once: \(lines)")
    }

    @Test("the scale-out example runs as written on a new PostgreSQL database: a device registered through one node, licensed by the other, renewed through the first; both list the license",
          .timeLimit(.minutes(3)))
    func scaleOutExample() async throws {
        for tool in ["ffmpeg", "curl", "openssl"] { try TestMedia.require(tool) }
        // scripts/test makes this database afresh for every run (the example's own URL names a database of yours).
        let database = try #require(ProcessInfo.processInfo.environment["SATCHEL_README_DATABASE_URL"],
                                    "PostgreSQL is required: set SATCHEL_README_DATABASE_URL to a new database, or run scripts/test, which makes one")
        Self.requireFree([8087, 8088], "scale-out example")
        let written = "postgres://satchel:satchel@127.0.0.1:5432/satchel"
        let example = try Self.block(after: "<!-- scale-out -->")
        #expect(example.contains("export SATCHEL_DATABASE_URL=\(written)\n"))
        let result = try await Self.run(try Self.block(after: "<!-- clip -->") + "\n"
                                         + example.replacingOccurrences(of: "SATCHEL_DATABASE_URL=\(written)\n", with: "SATCHEL_DATABASE_URL=\(database)\n"),
                                         label: "readme-scale-out")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        let license = try #require(result.stdout.split(separator: "\n").first { $0.hasPrefix("license ") && $0.hasSuffix("for movie: valid, persistent") })
        let id = license.split(separator: " ")[1]
        #expect(result.stdout.contains("license \(id) for movie renewed"), "\(result.stdout)")
        #expect(result.stdout.contains("\(id)\t") && result.stdout.contains("\tuser-42\tmovie\trenewed\tpersistent"), "\(result.stdout)")
        #expect(result.stdout.contains("listening: connected to the backplane\napplied 1: wipe"), "the wipe crossed the nodes: \(result.stdout)")
    }

    @Test("the backplane example runs as written: a limit and its notice, settings, a remote delete and wipe applied in order at the next sync, a kill, the other device enabled, a stream limit, the devices' events counted, a feed followed",
          .timeLimit(.minutes(3)))
    func backplaneExample() async throws {
        for tool in ["curl", "openssl", "python3"] { try TestMedia.require(tool) }
        Self.requireFree([8089], "backplane example")
        let result = try await Self.run(try Self.block(after: "<!-- backplane -->"), label: "readme-backplane")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect(result.stderr.contains("device-limit-reached"), "the tablet is past the limit: \(result.stderr.suffix(800))")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("applied 1: delete-asset movie") && lines.contains("applied 2: wipe") && lines.contains("applied 3: kill"), "\(result.stdout)")
        #expect(lines.contains("phone killed: wiped and unregistered"))
        #expect(lines.contains { $0.hasPrefix("global: max devices 1, ") && $0.contains("max downloads 20") }, "limits show: \(result.stdout)")
        #expect(lines.contains { $0.hasPrefix("user-42: max devices 1") && $0.contains("max streams 2") && $0.contains("1 of 2 devices enabled") },
                "\(result.stdout)")
        #expect(lines.contains("no stream slot is held"))
        #expect(result.stdout.contains("\"kind\" : \"command-applied\""), "the phone reported the commands it applied: \(result.stdout)")
        #expect(lines.contains { $0.hasSuffix("\tat most 5\tapplied through item 0") }, "the tablet follows the feed: \(result.stdout)")
    }

    @Test("the protected-file example runs as written: a file protected, opened with its key file, the same bytes", .timeLimit(.minutes(2)))
    func protectExample() async throws {
        let result = try await Self.run(try Self.block(after: "<!-- protect -->"), label: "readme-protect")
        #expect(result.status == 0 && result.stdout.contains("the same bytes"), "\(result.stdout) \(result.stderr.suffix(800))")
    }

    @Test("the device agent's example (server, register, acquire, list, rights, use, renew, delegated challenge and install, sync, release, licenses) runs as written",
          .timeLimit(.minutes(3)))
    func agentExample() async throws {
        #expect((try? RawConnection(port: 8083, timeout: 1)) == nil, "port 8083, which README's agent example uses, is taken")
        let result = try await Self.run(try Self.block(after: "<!-- agent -->"), label: "readme-agent")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect(result.stdout.contains("\"status\" : \"valid\"") && result.stdout.contains("1 key ready for playback"), "\(result.stdout)")
        #expect(result.stdout.contains("movie: license released") && result.stdout.contains("\tmovie\treleased\tpersistent"), "\(result.stdout)")
        #expect(result.stdout.components(separatedBy: "for movie: valid, persistent").count == 3, "acquired, then installed from a challenge: \(result.stdout)")
    }

    @Test("the CPIX exchange runs as written: keys exported encrypted for the vendor's certificate, imported back with its private key, packaged from with the same key and signalling", .timeLimit(.minutes(3)))
    func cpixExample() async throws {
        for tool in ["ffmpeg", "openssl"] { try TestMedia.require(tool) }
        let prelude = "ffmpeg -loglevel error -f lavfi -i testsrc2=duration=4:size=320x180:rate=25 -f lavfi -i sine=duration=4 -c:v libx264 -c:a aac -shortest in.mp4\n"
        let result = try await Self.run(prelude + (try Self.block(after: "<!-- cpix -->")) + """

            cmp <(grep -o 'cenc:pssh>[^<]*' site/trailer/manifest.mpd) <(grep -o 'cenc:pssh>[^<]*' site/trailer-vendor/manifest.mpd) && echo same-signalling
            satchel keys list --data-dir vendor-keys
            """, label: "readme-cpix")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect(result.stdout.contains("encrypted for the recipient; scheme cbcs; signalling for clearkey, playready, widevine, fairplay"), "\(result.stdout)")
        #expect(result.stdout.contains("imported 1 key for asset trailer") && result.stdout.contains("same-signalling"), "\(result.stdout)")
        #expect(result.stdout.contains("scheme cbcs for clearkey, playready, widevine, fairplay"), "the document's systems: \(result.stdout)")
    }

    @Test("one example per scheme, and the ffmpeg checks after them, run as written", .timeLimit(.minutes(3)))
    func packageExamples() async throws {
        try TestMedia.require("ffmpeg")
        // Only the clip README's tour makes first: the block makes its key, key ID and ladder itself.
        let prelude = """
            ffmpeg -loglevel error -f lavfi -i testsrc2=duration=4:size=640x360:rate=25 -f lavfi -i sine=duration=4 -c:v libx264 -c:a aac -shortest in.mp4

            """
        let result = try await Self.run(prelude + (try Self.block(after: "<!-- package-examples -->")) + "\n"
                                        + (try Self.block(after: "<!-- package-checks -->")) + "\necho checked\n", label: "readme-package")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect(result.stdout.contains("checked"))
        #expect(result.stdout.split(separator: "\n").filter { $0.hasPrefix("packaged ") }.count == 10)
    }

    @Test("the main job: satchel demo packages the sample three ways and serves them; the player plays demo-cenc and demo-cbcs in Chromium with the demo's tokens; every command it prints runs (SAMPLE-AES HLS through the proxy, the offline round trip)",
          .timeLimit(.minutes(5)))
    func mainJob() async throws {
        for tool in ["ffmpeg", "curl", "bash"] { try TestMedia.require(tool) }
        let readme = try String(contentsOf: CLIRunner.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let line = try #require(readme.split(separator: "\n").first { $0.hasPrefix("swift run satchel ") })
        #expect(line == "swift run satchel demo", "the main job is the demo")
        #expect((try? RawConnection(port: 8080, timeout: 1)) == nil, "port 8080, which the main job uses, is taken")
        let binary = try #require(CLIRunner.binary)
        let work = try TestMedia.temporaryDirectory("readme-demo")  // not the checkout: the demo finds the sample by its build path
        let output = work.appendingPathComponent("demo.out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let demo = Process()
        demo.executableURL = binary
        demo.arguments = line.split(separator: " ").dropFirst(3).map(String.init)
        demo.currentDirectoryURL = work
        demo.standardOutput = try FileHandle(forWritingTo: output)
        demo.standardError = FileHandle.nullDevice
        try demo.run()
        defer { demo.terminate(); demo.waitUntilExit() }  // blocking-ok: a child already sent SIGTERM, at the test's end
        let started = try await TestMedia.offloaded { () -> Bool in
            for _ in 0..<600 {
                if (try? RawConnection(port: 8080, timeout: 1)) != nil, (try? String(contentsOf: output, encoding: .utf8))?.contains("Offline round trip") == true { return true }
                Thread.sleep(forTimeInterval: 0.1)
            }
            return false
        }
        let printed = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        #expect(started, "the demo did not start: \(printed.suffix(800))")
        #expect(printed.contains("Player, CMAF cenc:  http://127.0.0.1:8080/play/demo-cenc") && printed.contains("/play/demo-cbcs"))
        #expect(!printed.contains("eyJ"), "no token is printed")
        for package in ["demo-cenc/manifest.mpd", "demo-cbcs/manifest.mpd", "demo-sample-aes/master.m3u8"] {
            #expect(FileManager.default.fileExists(atPath: work.appendingPathComponent("satchel-demo/site/\(package)").path), "\(package)")
        }
        // A second demo in the same folder refuses (before it looks at its port) and leaves the running demo's folder as it is.
        let operatorKey = work.appendingPathComponent("satchel-demo/operator.key")
        let (second, keyBefore, keyAfter) = try await TestMedia.offloaded { () throws -> (ProcessRunner.Result, Data, Data) in
            let before = try Data(contentsOf: operatorKey)
            let second = try ProcessRunner.run(binary, ["demo", "--port", "8080"], directory: work)
            return (second, before, try Data(contentsOf: operatorKey))
        }
        #expect(second.status != 0 && second.stderr.contains("another satchel demo is running in") && second.stderr.contains("--dir"), "\(second.stderr)")
        #expect(keyAfter == keyBefore, "the first demo's folder is untouched")

        // The player plays both CMAF packages with the demo's token (no token in the address).
        let browser = try await WebDriver.start()
        do {
            for asset in ["demo-cenc", "demo-cbcs"] {
                try await browser.open("http://127.0.0.1:8080/play/\(asset)")
                let played = try await browser.wait(30, until: "return document.querySelector('video').currentTime > 3")
                let errors = try await browser.execute("return window.satchel ? window.satchel.errors : 'no player'")
                #expect(played, "\(asset): \(String(describing: errors))")
                try await browser.screenshot("demo-\(asset)")
            }
            // The dashboard, signed in with the operator key the demo wrote (and names the file of).
            let keyFile = work.appendingPathComponent("satchel-demo/operator.key")
            #expect(printed.contains("Dashboard:          http://127.0.0.1:8080/admin (sign in with the operator key: cat \(keyFile.path))"))
            let key = try String(contentsOf: keyFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!printed.contains(key), "the operator key is not printed")
            try await AdminDashboardTests.signIn(browser, "http://127.0.0.1:8080", key: key)
            let assets = try await browser.execute("return document.querySelector('.stat .value')?.textContent") as? String
            #expect(assets == "3", "the dashboard lists the demo's three assets")
            try await browser.screenshot("demo-dashboard")
        } catch {
            await browser.quit()
            throw error
        }
        await browser.quit()

        // Every command it prints, as printed, with ffplay swapped for ffmpeg decoding to nothing (no window here):
        // each exits 0 and the decoder complains of nothing.
        let commands = printed.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix(binary.path + " ") }
        #expect(commands.count == 5, "\(commands)")
        for command in commands {
            let runnable = command.replacingOccurrences(of: "'ffplay -i {url}'", with: "'ffmpeg -v error -i {url} -f null -'")
            let result = try await Self.run(runnable, label: "readme-demo-command")
            let complaints = result.stderr.split(separator: "\n").filter { $0.contains(" @ 0x") }
            #expect(result.status == 0 && complaints.isEmpty, "\(command.prefix(120)): \(result.stderr.suffix(800))")
        }
    }

    @Test("the license service alone starts with Apple's development credentials, as written", .timeLimit(.minutes(2)))
    func serveAlone() async throws {
        let readme = try Self.pages()
        let line = try #require(readme.split(separator: "\n").first { $0.hasPrefix("swift run satchel serve ") })
        // The same command with the binary `swift run` would build, so the test does not build twice.
        let command = "satchel" + line.dropFirst("swift run satchel".count)
        let script = """
            \(command) &
            until curl -sf http://127.0.0.1:8080/health > /dev/null; do sleep 0.2; done
            curl -sf http://127.0.0.1:8080/fps/certificate -o cert.der
            cmp cert.der ../shared/conformance/fairplay/credentials/dev_certificate.der && echo "certificate served"
            """
        for port in [8080] { #expect((try? RawConnection(port: port, timeout: 1)) == nil, "port \(port), which the main job uses, is taken") }
        let result = try await Self.run(script, label: "readme-main")
        #expect(result.status == 0, "\(result.stderr.suffix(1500))")
        #expect(result.stdout.contains("certificate served"))
    }
}
