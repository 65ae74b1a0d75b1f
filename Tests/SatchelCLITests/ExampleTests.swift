import Foundation
import SatchelTestSupport
import Testing

/// `Examples/OfflinePlayback`: a package of its own that depends on Satchel by path and does download → license → play
/// through the public API only. `scripts/test` builds it into Satchel's own build folder (nothing is built twice) and
/// fails when it does not build; run without it, the test builds it into `.build-examples` (a build into `.build`
/// would wait for the lock `swift test` holds). Run against a real `satchel serve`: what it reads from the proxy is
/// the clear media.
@Suite("The embedding example: download, license, play through the public API")
struct ExampleTests {
    static let example = CLIRunner.packageRoot.appendingPathComponent("Examples/OfflinePlayback")
    static let scratch = CLIRunner.packageRoot.appendingPathComponent(".build-examples")

    /// The size and MD5 of each video packet of `input`, as ffmpeg demuxes it.
    static func videoPackets(_ input: String) throws -> [String] {
        let hls = input.hasSuffix(".m3u8") ? ["-allowed_extensions", "ALL"] : []
        let lines = try TestMedia.run("ffmpeg", ["-v", "error"] + hls + ["-i", input, "-map", "0:v", "-c", "copy", "-f", "framemd5", "-"])
        return lines.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return fields.count >= 6 ? fields[4] + "," + fields[5] : String(line)
        }
    }

    @Test("Examples/OfflinePlayback builds against the public API and plays an AES-128 download offline, decrypted packet for packet")
    func offlinePlayback() async throws {
        let (server, origin, site, input, data) = try await PlayCommandTests.stage("example")
        defer { server.stop(); origin.stop() }
        let output = server.directory.appendingPathComponent("played.ts")
        try await TestMedia.offloaded {
            let prebuilt = CLIRunner.packageRoot.appendingPathComponent(".build/debug/OfflinePlayback")
            var binary = prebuilt
            if ProcessInfo.processInfo.environment["SATCHEL_EXAMPLE_BUILT"] == nil || !FileManager.default.isExecutableFile(atPath: prebuilt.path) {
                let swift = URL(fileURLWithPath: "/usr/bin/env")
                let built = try ProcessRunner.run(swift, ["swift", "build", "--package-path", Self.example.path, "--scratch-path", Self.scratch.path])
                #expect(built.status == 0, "the example does not build: \(built.stdout.suffix(3000)) \(built.stderr.suffix(2000))")
                binary = Self.scratch.appendingPathComponent("debug/OfflinePlayback")
            }
            try PlayCommandTests.package(input, into: site.appendingPathComponent("clear"), format: "hls-ts")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("film"), format: "hls-ts", scheme: "aes-128", asset: "film",
                                         server: server, offline: true)
            let run = try ProcessRunner.run(binary, [server.url, try server.token(), origin.url("film/master.m3u8"), "film", data, output.path])
            #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
            #expect(run.stdout.contains("downloaded film: valid") && run.stdout.contains("protected: true"), "\(run.stdout)")
            #expect(!run.stdout.contains(try server.token()), "the token is never printed")
            // The example reads the first variant's segments: the video, byte for byte the clear package's.
            let played = try Self.videoPackets(output.path)
            let expected = try Self.videoPackets(site.appendingPathComponent("clear/master.m3u8").path)
            #expect(played.count > 50 && played == expected, "\(played.count) video packets read through the example, \(expected.count) in the clear package")
        }
    }

    @Test("README's embedding snippet is the example's own code (each of its lines is in main.swift, which the test above builds and runs); README and the example's README give the package line with the first release tag and the products")
    func readmeSnippet() throws {
        let readme = try String(contentsOf: CLIRunner.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "<!-- embedding -->\n```swift\n"))
        let snippet = readme[start.upperBound...]
        let end = try #require(snippet.range(of: "\n```"))
        let main = try String(contentsOf: Self.example.appendingPathComponent("Sources/OfflinePlayback/main.swift"), encoding: .utf8)
        let lines = snippet[..<end.lowerBound].split(separator: "\n").map { line in
            String(line.split(separator: "//", maxSplits: 1, omittingEmptySubsequences: false)[0]).trimmingCharacters(in: .whitespaces)
        }.filter { !$0.isEmpty }
        #expect(lines.count >= 6)
        for line in lines { #expect(main.contains(line), "README's snippet line is not the example's: \(line)") }
        let exampleReadme = try String(contentsOf: Self.example.appendingPathComponent("README.md"), encoding: .utf8)
        for text in [readme, exampleReadme] {
            #expect(text.contains(#"from: "0.1.0")"#) && text.contains(#".product(name: "SatchelDevice", package: "Satchel")"#))
        }
    }

    @Test("README's package line resolves: an app whose Package.swift is README's, with the URL it was cloned from, gets Satchel at a release tag and its four products", .timeLimit(.minutes(10)))
    func packageLineResolves() async throws {
        let readme = try String(contentsOf: CLIRunner.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "// Your app's Package.swift\n"))
        let manifest = String(readme[start.upperBound...].prefix { $0 != "`" })
        let url = try #require(manifest.firstMatch(of: /\.package\(url: "([^"]+)"/)?.1)
        let app = FileManager.default.temporaryDirectory.appendingPathComponent("satchel-app-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: app) }
        try await TestMedia.offloaded {
            // The repository as an app would clone it. A clone made without tags (CI's may be) is tagged here, so
            // the test is of the line, not of how the checkout was made; `git tag` in the repository shows the
            // release tag itself.
            let git = URL(fileURLWithPath: "/usr/bin/env")
            let origin = app.appendingPathComponent("satchel.git")
            try FileManager.default.createDirectory(at: app.appendingPathComponent("Sources/MyPlayer"), withIntermediateDirectories: true)
            let cloned = try ProcessRunner.run(git, ["git", "clone", "-q", "--bare", CLIRunner.packageRoot.path, origin.path])
            #expect(cloned.status == 0, "\(cloned.stderr)")
            let tags = try ProcessRunner.run(git, ["git", "--git-dir", origin.path, "tag", "-l", "0.*"])
            if tags.stdout.isEmpty { _ = try ProcessRunner.run(git, ["git", "--git-dir", origin.path, "tag", "0.1.0"]) }
            let package = """
                // swift-tools-version:6.0
                import PackageDescription
                let package = Package(name: "MyPlayer", platforms: [.macOS(.v14)],
                \(manifest.replacingOccurrences(of: url, with: origin.absoluteString)))
                """
            try Data(package.utf8).write(to: app.appendingPathComponent("Package.swift"))
            try Data("print(\"hello\")\n".utf8).write(to: app.appendingPathComponent("Sources/MyPlayer/main.swift"))
            // `show-dependencies` resolves and loads the graph: a product README names that Satchel lacks fails it.
            let shown = try ProcessRunner.run(git, ["swift", "package", "show-dependencies", "--format", "json"], directory: app)
            #expect(shown.status == 0, "\(shown.stdout.suffix(2000)) \(shown.stderr.suffix(3000))")
            let graph = try JSONSerialization.jsonObject(with: Data(shown.stdout.utf8)) as? [String: Any]
            let satchel = (graph?["dependencies"] as? [[String: Any]])?.first { $0["name"] as? String == "Satchel" }
            let version = satchel?["version"] as? String ?? "none"
            #expect(version.wholeMatch(of: /\d+\.\d+\.\d+/) != nil, "Satchel resolved at \(version), not at a release tag")
        }
    }
}
