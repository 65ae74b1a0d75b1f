import Foundation
import SatchelLicensing
import SatchelTestSupport
import Testing

/// What a new user meets first: tokens for local testing, commands that create nothing by accident, and
/// one plain sentence for the common mistakes.
@Suite("satchel: the newcomer's path")
struct NewcomerTests {
    @Test("the server's start-up line names its version and build (seed 000 §5.7), as satchel --version does")
    func startUpLine() async throws {
        let folder = try TestMedia.temporaryDirectory("start-up")
        let log = folder.appendingPathComponent("serve.log").path
        try await TestMedia.offloaded {
            let version = try CLIRunner.run(["--version"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try LineReader(["serve", "--insecure-no-entitlement", "--data-dir", folder.appendingPathComponent("server").path, "--port", "0",
                                         "--log-file", log])
            defer { server.stop() }
            #expect(server.wait(for: "listening on", seconds: 30), "\(server.lines)")
            server.stop()
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(!version.isEmpty && text.contains("satchel \(version) (") && (text.contains("debug build, linux") || text.contains("release build, linux")),
                    "\(text.prefix(600))")
        }
    }

    @Test("satchel token signs with a JWKS key the server accepts; an unknown kid is refused")
    func token() async throws {
        let dir = try TestMedia.temporaryDirectory("cli-token")
        let jwks = dir.appendingPathComponent("jwks.json")
        try #"{"keys":[{"kty":"oct","kid":"backend","k":"c2F0Y2hlbC1leGFtcGxlLXNlY3JldC1vZi0zMi1ieXRlcyE"}]}"#
            .write(to: jwks, atomically: true, encoding: .utf8)
        let made = try await CLIRunner.run(["token", "--jwks", jwks.path, "--kid", "backend", "--sub", "user-42", "--asset", "movie",
                                      "--persistent", "--ttl", "600"])
        #expect(made.status == 0, "\(made.stderr)")
        let verifier = try await EntitlementVerifier(jwks: try await TestMedia.contents(of: jwks))
        let claims = try await verifier.verify(made.stdout.trimmingCharacters(in: .whitespacesAndNewlines), now: Date())
        #expect(claims.sub.value == "user-42" && claims.asset == "movie" && claims.persistent == true)
        #expect(claims.exp.value.timeIntervalSinceNow > 500 && claims.exp.value.timeIntervalSinceNow <= 600)
        let unknown = try await CLIRunner.run(["token", "--jwks", jwks.path, "--kid", "other", "--sub", "u", "--asset", "movie"])
        #expect(unknown.status != 0 && unknown.stderr.contains("no key with kid other"))
    }

    @Test("read-only commands with a data directory that does not exist say so and create nothing")
    func readOnly() async throws {
        try await TestMedia.offloaded {
            let missing = try TestMedia.temporaryDirectory("cli-readonly").appendingPathComponent("nothing-here")
            for command in [["keys", "list"], ["download", "list"]] {
                let result = try CLIRunner.run(command + ["--data-dir", missing.path])
                #expect(result.status != 0 && result.stderr.contains("no data directory at \(missing.path)"), "\(command)")
                #expect(!FileManager.default.fileExists(atPath: missing.path), "\(command) created nothing")
            }
        }
    }

    @Test("one plain sentence: a file that is not media, a port in use, a refused connection, a JSON error saved as a CKC")
    func plainErrors() async throws {
        let dir = try TestMedia.temporaryDirectory("cli-errors")
        let text = dir.appendingPathComponent("notes.txt")
        try String(repeating: "not media at all\n", count: 10).write(to: text, atomically: true, encoding: .utf8)
        let packaged = try await CLIRunner.run(["package", text.path, "--out", dir.appendingPathComponent("pkg").path, "--format", "hls-ts"])
        #expect(packaged.status != 0 && packaged.stderr.contains("not an MP4, MOV or MPEG-TS file"), "\(packaged.stderr)")

        let refused = try await CLIRunner.run(["download", "add", "http://127.0.0.1:1/movie/master.m3u8", "--data-dir", dir.appendingPathComponent("dl").path])
        #expect(refused.status != 0 && refused.stderr.contains("connection refused: nothing is listening at 127.0.0.1:1"), "\(refused.stderr)")

        let problem = dir.appendingPathComponent("movie.ckc")
        try #"{"detail":"the token has expired","status":401,"title":"Unauthorized","type":"https://satchel.dev/problems/invalid-entitlement"}"#
            .write(to: problem, atomically: true, encoding: .utf8)
        let session = dir.appendingPathComponent("movie.json")
        try Data("{}".utf8).write(to: session)
        let spc = try await CLIRunner.run(["fps", "simulate", "spc", "--certificate", CLIRunner.credentials + "/dev_certificate.der", "--dask", CLIRunner.dask,
                                     "--asset-id", "movie", "--out", dir.appendingPathComponent("movie.spc").path, "--session", session.path])
        #expect(spc.status == 0, "\(spc.stderr)")
        let opened = try await CLIRunner.run(["fps", "simulate", "open", "--ckc", problem.path, "--session", session.path])
        #expect(opened.status != 0 && opened.stderr.contains("holds the server's error answer, not a CKC: the token has expired"), "\(opened.stderr)")

        let binary = try #require(CLIRunner.binary)
        let data = dir.appendingPathComponent("data").path
        let first = Process()
        first.executableURL = binary
        first.arguments = ["serve", "--data-dir", data, "--insecure-no-entitlement", "--port", "0"]
        first.standardError = FileHandle.nullDevice
        let listening = Pipe()
        first.standardOutput = listening
        try first.run()
        defer { first.terminate() }
        try await TestMedia.offloaded {
            let port = try #require(ListeningLine.port(from: listening), "the first server prints the port it listens on")
            let second = try CLIRunner.run(["serve", "--data-dir", data, "--insecure-no-entitlement", "--port", String(port)])
            #expect(second.status != 0 && second.stderr.contains("port \(port) on 127.0.0.1 is already in use"), "\(second.stderr)")
            // A second demo on the busy port: one line naming the port and --port, no banner, nothing made.
            let demoDir = dir.appendingPathComponent("demo")
            let demo = try CLIRunner.run(["demo", "--port", String(port), "--dir", demoDir.path])
            #expect(demo.status != 0 && demo.stdout.isEmpty, "no banner: \(demo.stdout)")
            let lines = demo.stderr.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].contains("port \(port)") && lines[0].contains("--port"), "\(demo.stderr)")
            #expect(!FileManager.default.fileExists(atPath: demoDir.path), "the demo did no work before it found the port taken")
        }
    }

    @Test("a file that is not there names the file and what to do, never Foundation's error domain; a playlist on disk given to play says to serve it or download it")
    func fileErrors() async throws {
        try await TestMedia.offloaded {
            let dir = try TestMedia.temporaryDirectory("cli-file-errors")
            let document = dir.appendingPathComponent("notes.txt")
            try "a document\n".write(to: document, atomically: true, encoding: .utf8)
            let protected = dir.appendingPathComponent("notes.satchel").path
            #expect(try CLIRunner.run(["protect", document.path, "--out", protected]).status == 0)
            let missing = dir.appendingPathComponent("missing.keys.json").path
            let opened = try CLIRunner.run(["open", protected, "--keys", missing])
            #expect(opened.status != 0 && opened.stderr.contains("\(missing) does not exist: check the path") && !opened.stderr.contains("Domain"), "\(opened.stderr)")

            let playlist = dir.appendingPathComponent("master.m3u8")
            try "#EXTM3U\n#EXT-X-VERSION:3\n".write(to: playlist, atomically: true, encoding: .utf8)
            let played = try CLIRunner.run(["play", playlist.path, "--data-dir", dir.appendingPathComponent("d").path])
            #expect(played.status != 0 && played.stderr.contains("is a streaming manifest on disk") && played.stderr.contains("http.server")
                    && !played.stderr.contains("box"), "\(played.stderr)")
        }
    }

    @Test("download add --header reaches the origin and never appears in output or errors")
    func headers() async throws {
        let directory = try TestMedia.temporaryDirectory("cli-header")
        let site = directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let input = try await TestMedia.offloaded { try TestMedia.make("cli-header", seconds: 2) }
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        origin.require(header: "Authorization", value: "Bearer right-s3cret")
        let data = directory.appendingPathComponent("dl").path
        try await TestMedia.offloaded {
            let packaged = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("movie").path, "--format", "hls-ts"])
            #expect(packaged.status == 0, "\(packaged.stderr)")
            let wrong = try CLIRunner.run(["download", "add", origin.url("movie/master.m3u8"), "--data-dir", data, "--id", "m",
                                           "--header", "Authorization: Bearer wrong-s3cret"])
            #expect(wrong.status != 0 && wrong.stderr.contains("HTTP 401") && !wrong.stderr.contains("s3cret"), "\(wrong.stderr)")
            let added = try CLIRunner.run(["download", "add", origin.url("movie/master.m3u8"), "--data-dir", data, "--id", "m",
                                           "--header", "Authorization: Bearer right-s3cret"])
            #expect(added.status == 0, "\(added.stderr)")
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0 && !run.stderr.contains("s3cret"), "\(run.stderr)")
            let list = try CLIRunner.run(["download", "list", "--data-dir", data, "--json"])
            #expect(list.stdout.contains("\"complete\"") && !list.stdout.contains("s3cret"))
            let bad = try CLIRunner.run(["download", "add", origin.url("movie/master.m3u8"), "--data-dir", data, "--header", "no colon here"])
            #expect(bad.status != 0 && bad.stderr.contains("Name: value"))
        }
    }

    @Test("a misspelt subcommand or option is named first, with the nearest valid name, before anything the line lacks")
    func misspellings() async throws {
        try await TestMedia.offloaded {
            let cases: [([String], String)] = [
                (["pakage", "in.mp4"], "unknown command 'pakage' for 'satchel'; did you mean 'package'?"),
                (["download", "ad", "http://o/x.m3u8"], "unknown command 'ad' for 'satchel download'; did you mean 'add'?"),
                (["package", "in.mp4", "--out", "o", "--formt", "cmaf"], "unknown option '--formt' for 'satchel package'; did you mean '--format'?"),
                (["license", "acquire", "movie", "--tokn", "x"], "unknown option '--tokn' for 'satchel license acquire'; did you mean '--token'?"),
                (["serve", "--data-dir=x", "--prot=8080"], "unknown option '--prot' for 'satchel serve'; did you mean '--port'?"),
            ]
            for (arguments, message) in cases {
                let result = try CLIRunner.run(arguments)
                #expect(result.status == 64 && result.stderr.contains(message), "\(arguments): \(result.stderr)")
                #expect(!result.stderr.contains("Missing"), "the misspelling comes first: \(result.stderr)")
            }
            // play's help names every kind of source it takes.
            let help = try CLIRunner.run(["play", "--help"])
            #expect(help.stdout.contains("HLS") && help.stdout.contains("DASH") && help.stdout.contains("Smooth Streaming"), "\(help.stdout)")
            // A word nothing is near lists the commands; an option's value that looks like an option is a value.
            let far = try CLIRunner.run(["zzzzzzzz"])
            #expect(far.status == 64 && far.stderr.contains("the commands are ") && far.stderr.contains("package"), "\(far.stderr)")
            let value = try CLIRunner.run(["fps", "simulate", "spc", "--asset-id", "--not-an-option", "--certificate", "/nonexistent", "--dask", CLIRunner.dask,
                                           "--out", "/nonexistent/x", "--session", "/nonexistent/y"])
            #expect(!value.stderr.contains("unknown option"), "\(value.stderr)")
        }
    }

    @Test("satchel play: an unknown asset lists the IDs there are; no rights says how to get a license; download IDs are read from the URL")
    func playMessages() async throws {
        try TestMedia.require("ffmpeg")
        let directory = try TestMedia.temporaryDirectory("cli-play-messages")
        let site = directory.appendingPathComponent("site")
        let input = try await TestMedia.offloaded { try TestMedia.make("cli-play-messages", seconds: 2) }
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        let data = directory.appendingPathComponent("device").path
        try await TestMedia.offloaded {
            for (name, scheme) in [("movie", "clear"), ("secret", "cenc")] {
                let packaged = try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent(name).path, "--format", "cmaf", "--scheme", scheme])
                #expect(packaged.status == 0, "\(packaged.stderr)")
            }
            // No --id: readable IDs, made unique.
            for (url, id) in [("movie/master.m3u8", "movie"), ("movie/manifest.mpd", "movie-2"), ("secret/master.m3u8", "secret")] {
                let added = try CLIRunner.run(["download", "add", origin.url(url), "--data-dir", data])
                #expect(added.status == 0 && added.stdout.hasPrefix("\(id)\t"), "\(url): \(added.stdout) \(added.stderr)")
            }
            let unknown = try CLIRunner.run(["play", "moive", "--data-dir", data])
            #expect(unknown.status != 0 && unknown.stderr.contains("no downloaded asset moive; this data directory has: movie, movie-2, secret"),
                    "\(unknown.stderr)")
            let noRights = try CLIRunner.run(["play", "secret", "--data-dir", data])
            #expect(noRights.status != 0 && noRights.stderr.contains("no-rights: this device holds no license for secret"), "\(noRights.stderr)")
            #expect(noRights.stderr.contains("satchel license acquire secret --token TOKEN") && noRights.stderr.contains("download add URL --license --token TOKEN"),
                    "\(noRights.stderr)")
        }
    }
}
