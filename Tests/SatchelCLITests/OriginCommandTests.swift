import Foundation
import SatchelTestSupport
import Testing

/// `satchel serve --origin DIR`: packages published under `/content/` as a CDN serves them, read by curl and ffmpeg.
@Suite(.serialized) struct OriginCommandTests {
    /// curl with `headers` (and `method`): status, headers (lower-cased names) and body.
    static func request(_ url: String, method: String = "GET", headers: [String] = []) throws -> (status: Int, headers: [String: String], body: [UInt8]) {
        let directory = try TestMedia.temporaryDirectory("origin-fetch")
        defer { try? FileManager.default.removeItem(at: directory) }
        let body = directory.appendingPathComponent("body"), head = directory.appendingPathComponent("head")
        var arguments = ["-s", "--path-as-is", "-D", head.path, "-o", body.path] + (method == "HEAD" ? ["-I"] : ["-X", method])
        for header in headers { arguments += ["-H", header] }
        _ = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/curl"), arguments + [url])
        let lines = (try? String(contentsOf: head, encoding: .utf8))?.components(separatedBy: "\r\n") ?? []
        let status = Int(lines.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { fields[parts[0].lowercased()] = parts[1] }
        }
        return (status, fields, Array((try? Data(contentsOf: body)) ?? Data()))
    }

    @Test("the origin: types per format, byte ranges (206, 416), ETag and Last-Modified with 304s and If-Range, CORS on answers, errors and preflights; key files, files only their owner may read, hidden names, escapes, symbolic links out and links to what the rules refuse are 404 (a link within the rules is served); ffmpeg plays the HLS from it")
    func origin() async throws {
        try TestMedia.require("ffmpeg")
        let server = try await AgentCommandTests.Server("origin")
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let input = try await TestMedia.offloaded { try TestMedia.make("origin-source", seconds: 4) }
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("clear").path, "--format", "hls-ts",
                                       "--segment-duration", "2"]).status == 0)
            #expect(try CLIRunner.run(["package", input.path, "--out", site.appendingPathComponent("cenc").path, "--format", "cmaf",
                                       "--segment-duration", "2", "--scheme", "cenc"]).status == 0)
        }
        // The packager keeps the keys out of the package folder: beside it, mode 0600 (also refused by its name).
        #expect(!FileManager.default.fileExists(atPath: site.appendingPathComponent("cenc/keys.json").path))
        #expect(try FileManager.default.attributesOfItem(atPath: site.appendingPathComponent("cenc.keys.json").path)[.posixPermissions] as? Int == 0o600)
        // What must never be published: a world-readable keys.json inside a package (as older packagers wrote), a key file
        // under another name (mode 0600), a hidden folder, a link out.
        try Data(#"{"keys":[{"key":"5ec2e75ec2e75ec2e75ec2e75ec2e75e"}]}"#.utf8).write(to: site.appendingPathComponent("cenc/keys.json"))
        try Data("secret".utf8).write(to: site.appendingPathComponent("clear/renamed.bin"))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: site.appendingPathComponent("clear/renamed.bin").path)
        try Data("key".utf8).write(to: site.appendingPathComponent("clear/content.key"))  // world-readable, but by its name a key
        try FileManager.default.createDirectory(at: site.appendingPathComponent(".hidden"), withIntermediateDirectories: true)
        try Data("hidden".utf8).write(to: site.appendingPathComponent(".hidden/file.ts"))
        try FileManager.default.createSymbolicLink(atPath: site.appendingPathComponent("clear/out.json").path, withDestinationPath: server.jwks.path)
        // Links inside the folder whose name passes the rules but whose target does not: a world-readable key, a .pem, a
        // hidden folder (a repository's .git). And a link whose both ends pass: it is served.
        try Data("world-readable key".utf8).write(to: site.appendingPathComponent("clear/world.key"))
        try Data("-----BEGIN PRIVATE KEY-----".utf8).write(to: site.appendingPathComponent("clear/x.pem"))
        try FileManager.default.createDirectory(at: site.appendingPathComponent(".git"), withIntermediateDirectories: true)
        try Data("[core]".utf8).write(to: site.appendingPathComponent(".git/config"))
        for (name, target) in [("clear/alias.ts", "world.key"), ("clear/pem.m4s", "x.pem"), ("pub", ".git"), ("clear/latest.m3u8", "master.m3u8")] {
            try FileManager.default.createSymbolicLink(atPath: site.appendingPathComponent(name).path, withDestinationPath: target)
        }
        server.serveArguments = ["--origin", site.path]
        try await server.start()
        defer { server.stop() }
        let base = server.url + "/content/"

        try await TestMedia.offloaded { () throws -> Void in
            let master = try Self.request(base + "clear/master.m3u8")
            #expect(master.status == 200 && master.headers["content-type"] == "application/vnd.apple.mpegurl", "\(master.headers)")
            #expect(master.headers["access-control-allow-origin"] == "*" && master.headers["cache-control"] == "no-cache")
            #expect(master.body == Array(try Data(contentsOf: site.appendingPathComponent("clear/master.m3u8"))))
            for (path, type) in [("cenc/manifest.mpd", "application/dash+xml"), ("clear/video_0/segment_0.ts", "video/mp2t"),
                                 ("cenc/video_0/init.mp4", "video/mp4"), ("cenc/video_0/segment_1.m4s", "video/mp4")] {
                let answer = try Self.request(base + path, method: "HEAD")
                #expect(answer.status == 200 && answer.headers["content-type"] == type, "\(path): \(answer.status) \(answer.headers)")
                let size = try #require(try FileManager.default.attributesOfItem(atPath: site.appendingPathComponent(path).path)[.size] as? Int)
                #expect(answer.headers["content-length"] == String(size), "\(path)")
            }

            // Ranges.
            let segment = "clear/video_0/segment_0.ts"
            let stored = Array(try Data(contentsOf: site.appendingPathComponent(segment)))
            let part = try Self.request(base + segment, headers: ["Range: bytes=100-299"])
            #expect(part.status == 206 && part.headers["content-range"] == "bytes 100-299/\(stored.count)" && part.body == Array(stored[100...299]))
            let tail = try Self.request(base + segment, headers: ["Range: bytes=-50"])
            #expect(tail.status == 206 && tail.body == Array(stored.suffix(50)))
            let outside = try Self.request(base + segment, headers: ["Range: bytes=\(stored.count)-"])
            #expect(outside.status == 416 && outside.headers["content-range"] == "bytes */\(stored.count)"
                    && outside.headers["content-type"] == "application/problem+json" && outside.headers["access-control-allow-origin"] == "*", "\(outside.headers)")

            // Validators and conditional requests.
            let whole = try Self.request(base + segment)
            let etag = try #require(whole.headers["etag"]), modified = try #require(whole.headers["last-modified"])
            #expect(whole.body == stored && whole.headers["cache-control"] == "public, max-age=86400" && modified.hasSuffix(" GMT"))
            let status1 = try Self.request(base + segment, headers: ["If-None-Match: \(etag)"]).status
            #expect(status1 == 304)
            let status2 = try Self.request(base + segment, headers: ["If-None-Match: \"other\""]).status
            #expect(status2 == 200)
            let status3 = try Self.request(base + segment, headers: ["If-Modified-Since: \(modified)"]).status
            #expect(status3 == 304)
            let status4 = try Self.request(base + segment, headers: ["If-Modified-Since: Thu, 01 Jan 2015 00:00:00 GMT"]).status
            #expect(status4 == 200)
            let current = try Self.request(base + segment, headers: ["Range: bytes=0-9", "If-Range: \(etag)"])
            #expect(current.status == 206 && current.body.count == 10)
            let changed = try Self.request(base + segment, headers: ["Range: bytes=0-9", "If-Range: \"changed\""])
            #expect(changed.status == 200 && changed.body == stored, "a validator that no longer matches: the whole file")

            // CORS preflight.
            let preflight = try Self.request(base + segment, method: "OPTIONS", headers: ["Origin: https://player.example", "Access-Control-Request-Method: GET",
                                                                                           "Access-Control-Request-Headers: range"])
            #expect(preflight.status == 204 && preflight.headers["access-control-allow-origin"] == "*"
                    && preflight.headers["access-control-allow-methods"]?.contains("GET") == true
                    && preflight.headers["access-control-allow-headers"]?.lowercased().contains("range") == true, "\(preflight.headers)")

            // Never published: each answers 404 (problem+json, CORS) and reveals nothing.
            for path in ["cenc/keys.json", "cenc.keys.json", "clear/content.key", "clear/renamed.bin", ".hidden/file.ts", "clear/out.json", "../jwks.json",
                         "clear/alias.ts", "clear/pem.m4s", "pub/config", "clear/world.key",
                         "clear/%2e%2e/%2e%2e/jwks.json", "clear/..%2f..%2fjwks.json", "clear/video_0", "clear", "nothing.ts", "clear/video_0/segment_0.ts%00"] {
                let refused = try Self.request(base + path)
                #expect(refused.status == 404 && refused.headers["content-type"] == "application/problem+json", "\(path): \(refused.status)")
                let text = String(decoding: refused.body, as: UTF8.self)
                #expect(!text.contains("secret") && !text.contains("5ec2e7") && !text.contains("\"k\"") && !text.contains(site.path)
                        && !text.contains("PRIVATE KEY") && !text.contains("[core]") && !text.contains("world-readable"), "\(path): \(text)")
            }
            let linked = try Self.request(base + "clear/latest.m3u8")
            let linkedTarget = Array(try Data(contentsOf: site.appendingPathComponent("clear/master.m3u8")))
            #expect(linked.status == 200 && linked.body == linkedTarget, "a link within the rules")

            // An encoded slash separates as a slash does (as CDNs read it); its names are checked all the same (above).
            let encoded = try Self.request(base + "clear%2Fmaster.m3u8")
            let playlist = Array(try Data(contentsOf: site.appendingPathComponent("clear/master.m3u8")))
            #expect(encoded.status == 200 && encoded.body == playlist)

            // A player reads the package from the origin as from the files.
            let played = try TestMedia.packetHashes(base + "clear/master.m3u8")
            let files = try TestMedia.packetHashes(site.appendingPathComponent("clear/master.m3u8").path)
            #expect(!played.isEmpty && played == files)
        }
    }

    @Test("--origin must name a folder")
    func missingFolder() async throws {
        try await TestMedia.offloaded {
            let result = try CLIRunner.run(["serve", "--origin", "/nonexistent/satchel-origin", "--insecure-no-entitlement", "--port", "1",
                                            "--data-dir", try TestMedia.temporaryDirectory("origin-missing").path])
            #expect(result.status != 0 && result.stderr.contains("origin folder /nonexistent/satchel-origin does not exist"), "\(result.stderr)")
        }
    }
}
