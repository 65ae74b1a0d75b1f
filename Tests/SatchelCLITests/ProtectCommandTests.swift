import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing

/// `satchel protect` and `satchel open` (seed 002's protected files; issue "Protected files"): any file protected, read
/// back with its key file or under a device's license, checked by a second implementation in Python.
@Suite(.serialized) struct ProtectCommandTests {
    static let opener = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../Contract/protected_file.py").standardized.path

    /// A 300 KB document of random bytes in a fresh folder.
    static func document(_ name: String) throws -> (folder: URL, file: String, bytes: Data) {
        let folder = try TestMedia.temporaryDirectory(name)
        let bytes = Data(SecureRandom.bytes(300_000))
        let file = folder.appendingPathComponent("book.pdf")
        try bytes.write(to: file)
        return (folder, file.path, bytes)
    }

    /// A license server and an origin serving its `site` folder (empty).
    static func servedSite(_ name: String) async throws -> (server: AgentCommandTests.Server, site: URL, origin: TestOrigin) {
        try TestMedia.require("curl")
        let server = try await AgentCommandTests.Server(name)
        try await server.start()
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        return (server, site, try await TestOrigin.start(root: site))
    }

    @Test("protect writes the file and its key beside it (0600); Python's cryptography opens it to the same bytes; open writes the plain file (0600) or stdout; a damaged chunk exits 1 having written nothing of it (with --out, nothing at all); a key file without the file's key is refused")
    func protectAndOpen() async throws {
        try TestMedia.require("python3")
        let (folder, file, bytes) = try Self.document("protect")
        let site = folder.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        let origin = try await TestOrigin.start(root: site)
        defer { origin.stop() }
        try await TestMedia.offloaded {
            let out = folder.appendingPathComponent("book.pdf.satchel").path
            let protected = try CLIRunner.run(["protect", file, "--out", out, "--title", "A book", "--chunk-size", "65536"])
            #expect(protected.status == 0 && protected.stdout.contains("300000 bytes of application/pdf, 5 chunks"), "\(protected.stdout) \(protected.stderr)")
            let keys = out + ".keys.json"
            #expect(try FileManager.default.attributesOfItem(atPath: keys)[.posixPermissions] as? Int == 0o600)
            let key = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keys))) as? [String: Any])
            let hex = try #require(((key["keys"] as? [[String: Any]])?.first?["key"]) as? String)
            #expect(!protected.stdout.contains(hex) && !protected.stderr.contains(hex), "the key is never printed")

            let python = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", Self.opener, "open", out, hex])
            #expect(python.status == 0 && Data(python.stdout.utf8).count > 0, "\(python.stderr)")
            let pythonPlain = folder.appendingPathComponent("python.pdf").path
            #expect(try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "python3 \"$0\" open \"$1\" \"$2\" > \"$3\"", Self.opener, out, hex, pythonPlain]).status == 0)
            #expect(try Data(contentsOf: URL(fileURLWithPath: pythonPlain)) == bytes, "the second implementation reads what Satchel wrote")

            let plain = folder.appendingPathComponent("plain.pdf").path
            let opened = try CLIRunner.run(["open", out, "--keys", keys, "--out", plain])
            #expect(opened.status == 0, "\(opened.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: plain)) == bytes)
            #expect(try FileManager.default.attributesOfItem(atPath: plain)[.posixPermissions] as? Int == 0o600)

            // From an origin: read by range, only what is needed.
            try FileManager.default.copyItem(atPath: out, toPath: site.appendingPathComponent("book.pdf.satchel").path)
            let fromOrigin = folder.appendingPathComponent("origin.pdf").path
            let remote = try CLIRunner.run(["open", origin.url("book.pdf.satchel"), "--keys", keys, "--out", fromOrigin])
            #expect(remote.status == 0, "\(remote.stderr)")
            try #require(FileManager.default.fileExists(atPath: fromOrigin), "no plain file: status \(remote.status), \(remote.stdout) \(remote.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: fromOrigin)) == bytes)
            #expect(!origin.log.isEmpty && origin.log.allSatisfy { $0.range != nil }, "every read a range request")

            // One byte of chunk 3 changed.
            var damaged = try Data(contentsOf: URL(fileURLWithPath: out))
            damaged[damaged.count - 100_000] ^= 0x40
            let broken = folder.appendingPathComponent("broken.satchel").path
            try damaged.write(to: URL(fileURLWithPath: broken))
            let refused = try CLIRunner.run(["open", broken, "--keys", keys, "--out", folder.appendingPathComponent("broken.pdf").path])
            #expect(refused.status == 1 && refused.stderr.contains("chunk 3 of the protected file is damaged"), "\(refused.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("broken.pdf").path))
            #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).allSatisfy { !$0.contains("opening") }, "no staged plain file left")
            let streamed = try ProcessRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", "\"$0\" open \"$1\" --keys \"$2\" | wc -c", try #require(CLIRunner.binary).path, broken, keys])
            #expect(streamed.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == String(3 * 65_536), "the three whole chunks before the damage, none of it")

            // A key file for another key.
            let other = folder.appendingPathComponent("other.satchel").path
            #expect(try CLIRunner.run(["protect", file, "--out", other]).status == 0)
            let wrong = try CLIRunner.run(["open", out, "--keys", other + ".keys.json"])
            #expect(wrong.status != 0 && wrong.stderr.contains("holds no key"), "\(wrong.stderr)")
            let neither = try CLIRunner.run(["open", out])
            #expect(neither.status != 0 && neither.stderr.contains("--keys FILE or --data-dir DIR"), "\(neither.stderr)")
        }
    }

    @Test("protect --register puts the key in the key store under a policy; a device opens the file under its license — found by the key ID in the file's header, whatever the file is named — and not once the rental has ended or without a license")
    func underALicense() async throws {
        let server = try await AgentCommandTests.Server("protect-license")
        let (folder, file, bytes) = try Self.document("protect-license")
        let out = folder.appendingPathComponent("book.satchel").path
        let registered = try await CLIRunner.run(["protect", file, "--out", out, "--register", "--data-dir", server.data, "--offline", "--rental-seconds", "4"])
        #expect(registered.status == 0 && registered.stdout.contains("registered 1 key for asset book"), "\(registered.stdout) \(registered.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out + ".keys.json"), "registered: no key file")
        try await server.start()
        defer { server.stop() }
        try await TestMedia.offloaded {
            let device = server.directory.appendingPathComponent("device").path
            let token = try server.token()
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", device]).status == 0)
            let none = try CLIRunner.run(["open", out, "--data-dir", device, "--asset-id", "book"])
            #expect(none.status != 0 && Data(none.stdout.utf8).isEmpty, "no license: nothing opens: \(none.stderr)")
            let unnamed = try CLIRunner.run(["open", out, "--data-dir", device])
            #expect(unnamed.status != 0 && unnamed.stderr.contains("holds no license with the file's key"), "\(unnamed.stderr)")
            let acquired = try CLIRunner.run(["license", "acquire", "book", "--server", server.url, "--token", token, "--data-dir", device, "--persistent"])
            #expect(acquired.status == 0, "\(acquired.stderr)")
            let plain = folder.appendingPathComponent("plain.pdf").path
            let opened = try CLIRunner.run(["open", out, "--data-dir", device, "--asset-id", "book", "--out", plain])
            #expect(opened.status == 0, "\(opened.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: plain)) == bytes)
            // Renamed, the file still finds its license by its key ID: opened, and played from its path.
            let renamed = folder.appendingPathComponent("chapter-one.satchel").path
            try FileManager.default.copyItem(atPath: out, toPath: renamed)
            let byKey = folder.appendingPathComponent("by-key.pdf").path
            let found = try CLIRunner.run(["open", renamed, "--data-dir", device, "--out", byKey])
            #expect(found.status == 0 && (try? Data(contentsOf: URL(fileURLWithPath: byKey))) == bytes, "\(found.stderr)")
            let player = try PlayCommandTests.Player([renamed, "--data-dir", device])
            let played = try PlayCommandTests.fetch(player.url)
            _ = player.stop()
            #expect(played.status == 200 && Data(played.body) == bytes, "\(played.status)")
            Thread.sleep(forTimeInterval: 5)
            let ended = try CLIRunner.run(["open", out, "--data-dir", device, "--asset-id", "book", "--out", folder.appendingPathComponent("late.pdf").path])
            #expect(ended.status != 0 && ended.stderr.contains("expired"), "\(ended.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("late.pdf").path))
        }
    }

    @Test("through the proxy: a protected PDF and EPUB on the origin are served as their plain bytes with their own type, length and ranges (curl and Python read ranges byte-identical to the originals, the origin asked only for the chunks needed); once the rental ended the session does not open")
    func throughTheProxy() async throws {
        let (server, site, origin) = try await Self.servedSite("protect-play")
        defer { server.stop(); origin.stop() }
        let data = server.directory.appendingPathComponent("device").path
        let pdf = Data(SecureRandom.bytes(700_000)), epub = Data(SecureRandom.bytes(150_001))
        try await TestMedia.offloaded {
            for (name, bytes, rental) in [("book.pdf", pdf, [String]()), ("novel.epub", epub, ["--rental-seconds", "4"])] {
                let plain = server.directory.appendingPathComponent(name)
                try bytes.write(to: plain)
                let asset = String(name.split(separator: ".")[0])
                let made = try CLIRunner.run(["protect", plain.path, "--out", site.appendingPathComponent(name + ".satchel").path, "--register",
                                              "--asset-id", asset, "--data-dir", server.data, "--offline"] + rental)
                #expect(made.status == 0, "\(made.stderr)")
            }
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(), "--data-dir", data]).status == 0)
        }
        let player = try await TestMedia.offloaded { try PlayCommandTests.Player([origin.url("book.pdf.satchel"), "--data-dir", data, "--token", try server.token(persistent: false, asset: "book")]) }
        try await TestMedia.offloaded {
            let whole = try PlayCommandTests.fetch(player.url)
            #expect(whole.status == 200 && Data(whole.body) == pdf, "\(whole.status) \(whole.body.count)")
            #expect(whole.headers["content-type"] == "application/pdf" && whole.headers["content-length"] == "700000", "\(whole.headers)")
            let before = origin.log.count
            let part = try PlayCommandTests.fetch(player.url, range: "bytes=65000-70000")
            #expect(part.status == 206 && Data(part.body) == pdf[65000...70000] && part.headers["content-range"] == "bytes 65000-70000/700000")
            let asked = origin.log.dropFirst(before)
            #expect(!asked.isEmpty && asked.allSatisfy { $0.range != nil }, "the origin is read by range, never whole: \(asked.map(\.range))")
            let python = """
            import random, sys, urllib.request
            url, original = sys.argv[1], open(sys.argv[2], "rb").read()
            rng = random.Random(7)
            for _ in range(40):
                a = rng.randrange(len(original)); b = min(len(original) - 1, a + rng.randrange(200000))
                got = urllib.request.urlopen(urllib.request.Request(url, headers={"Range": "bytes=%d-%d" % (a, b)})).read()
                assert got == original[a:b + 1], (a, b)
            print("ranges ok")
            """
            let ranges = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-c", python, player.url, server.directory.appendingPathComponent("book.pdf").path])
            #expect(ranges.stdout.contains("ranges ok"), "\(ranges.stderr)")
        }
        _ = try await TestMedia.offloaded { player.stop() }

        let novel = try await TestMedia.offloaded { try PlayCommandTests.Player([origin.url("novel.epub.satchel"), "--data-dir", data, "--token", try server.token(persistent: false, asset: "novel")]) }
        try await TestMedia.offloaded {
            let whole = try PlayCommandTests.fetch(novel.url)
            #expect(Data(whole.body) == epub && whole.headers["content-type"] == "application/epub+zip", "\(whole.headers)")
            _ = novel.stop()
            Thread.sleep(forTimeInterval: 5)
            let late = try CLIRunner.run(["play", origin.url("novel.epub.satchel"), "--data-dir", data, "--license-asset", "novel", "--exec", "true"])
            #expect(late.status != 0 && late.stderr.contains("expired"), "the rental ended: \(late.stderr)")
        }
    }

    @Test("a range read over an origin costs the origin only the chunks it touches: two 100-byte ranges of a 20 MB protected file, the session's opening included, ask the origin for well under 1 MB (the file's 64 KiB chunks, the header), never the file")
    func rangesOverAnOrigin() async throws {
        let (server, site, origin) = try await Self.servedSite("protect-ranges")
        defer { server.stop(); origin.stop() }
        let data = server.directory.appendingPathComponent("device").path
        let bytes = Data(SecureRandom.bytes(20_000_000))
        try await TestMedia.offloaded {
            let plain = server.directory.appendingPathComponent("atlas.pdf")
            try bytes.write(to: plain)
            let made = try CLIRunner.run(["protect", plain.path, "--out", site.appendingPathComponent("atlas.pdf.satchel").path, "--register",
                                          "--asset-id", "atlas", "--data-dir", server.data, "--chunk-size", "65536"])
            #expect(made.status == 0, "\(made.stderr)")
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", try server.token(), "--data-dir", data]).status == 0)
        }
        let before = origin.log.count
        let player = try await TestMedia.offloaded {
            try PlayCommandTests.Player([origin.url("atlas.pdf.satchel"), "--data-dir", data, "--token", try server.token(persistent: false, asset: "atlas")])
        }
        defer { _ = player.stop() }
        try await TestMedia.offloaded {
            for start in [1_000_000, 15_000_000] {
                let part = try PlayCommandTests.fetch(player.url, range: "bytes=\(start)-\(start + 99)")
                #expect(part.status == 206 && Data(part.body) == bytes[start...(start + 99)], "\(part.status)")
            }
        }
        let asked = origin.log.dropFirst(before).filter { $0.path.hasSuffix("atlas.pdf.satchel") }
        let costs = asked.map { request -> Int in
            guard let range = request.range, let dash = range.firstIndex(of: "-"), let from = Int(range.dropFirst(6).prefix(while: { $0 != "-" })),
                  let to = Int(range[range.index(after: dash)...]) else { return 20_000_000 }  // no range, or open-ended: the file
            return to - from + 1
        }
        let total = costs.reduce(0, +)
        #expect(!asked.isEmpty && total < 1_000_000, "the origin sent \(total) bytes for 200: \(asked.map { $0.range ?? "whole" })")
    }

    @Test("a protected file is downloaded like any single file, with its license, and plays from the download as its plain bytes; a local copy plays by its path")
    func downloadedAndLocal() async throws {
        let (server, site, origin) = try await Self.servedSite("protect-download")
        defer { server.stop(); origin.stop() }
        try await TestMedia.offloaded {
            let bytes = Data(SecureRandom.bytes(200_000))
            let plain = server.directory.appendingPathComponent("book.pdf")
            try bytes.write(to: plain)
            let made = try CLIRunner.run(["protect", plain.path, "--out", site.appendingPathComponent("book.pdf.satchel").path, "--register",
                                          "--asset-id", "book", "--data-dir", server.data, "--offline"])
            #expect(made.status == 0, "\(made.stderr)")
            let data = server.directory.appendingPathComponent("device").path
            let token = try server.token()
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", data]).status == 0)
            let added = try CLIRunner.run(["download", "add", origin.url("book.pdf.satchel"), "--id", "book", "--license", "--token", token, "--data-dir", data])
            #expect(added.status == 0, "\(added.stderr)")
            let ran = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(ran.status == 0, "\(ran.stderr)")
            let fromDownload = server.directory.appendingPathComponent("from-download.pdf").path
            let played = try CLIRunner.run(["play", "book", "--data-dir", data, "--exec", "curl -sf {url} -o \(fromDownload)"])
            #expect(played.status == 0, "\(played.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: fromDownload)) == bytes)

            let copy = server.directory.appendingPathComponent("shelf")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: site.appendingPathComponent("book.pdf.satchel"), to: copy.appendingPathComponent("book.pdf.satchel"))
            let fromPath = server.directory.appendingPathComponent("from-path.pdf").path
            // Under a system proxy that would capture loopback: said before the URL, the proxy's credentials never printed.
            let local = try ProcessRunner.run(URL(fileURLWithPath: "/usr/bin/env"), ["http_proxy=http://user:secret@proxy.invalid:3128", "no_proxy=",
                                              try #require(CLIRunner.binary).path, "play", copy.appendingPathComponent("book.pdf.satchel").path,
                                              "--license-asset", "book", "--data-dir", data, "--exec", "curl --noproxy * -sf {url} -o \(fromPath)"])
            #expect(local.status == 0, "\(local.stderr)")
            #expect(local.stderr.contains("warning: http_proxy is set and no_proxy does not cover 127.0.0.1") && !local.stderr.contains("secret"), "\(local.stderr)")
            #expect(try Data(contentsOf: URL(fileURLWithPath: fromPath)) == bytes)
        }
    }
}
