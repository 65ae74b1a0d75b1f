import Foundation
import SatchelTestSupport
import Testing

/// `satchel serve` over HTTPS (`--tls-certificate`, `--tls-key`): curl and the device agent as clients, HTTP/2 by
/// ALPN, the certificate read again on SIGHUP (seed 000 §3.2: license traffic is encrypted).
@Suite(.serialized) struct TLSServeTests {
    /// A self-signed certificate for 127.0.0.1 and its key, written as `name.pem` and `name.key` in `folder`.
    @discardableResult
    static func certificate(_ name: String, in folder: URL) throws -> (certificate: String, key: String) {
        let certificate = folder.appendingPathComponent("\(name).pem").path, key = folder.appendingPathComponent("\(name).key").path
        _ = try TestMedia.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate, "-subj", "/CN=\(name)",
                                          "-days", "2", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        return (certificate, key)
    }

    /// curl's answer: the status (0 when no HTTP answer came), the HTTP version, and curl's exit status.
    static func curl(_ url: String, _ options: [String]) throws -> (status: Int, version: String, exit: Int32) {
        let result = try ProcessRunner.run(try #require(TestMedia.which("curl")), ["-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                                                                                  "--max-time", "10"] + options + [url])
        let fields = result.stdout.split(separator: " ")
        return (Int(fields.first ?? "") ?? -1, fields.count > 1 ? String(fields[1]) : "", result.status)
    }

    /// A server over HTTPS with `name`'s certificate, logging to `serve.log` in its folder.
    /// An origin folder holds `site/big.bin` (2 MB) and the header timeout is 1 s: a transfer that lasts longer must
    /// not be cut.
    static func server(_ name: String, extra: [String] = []) async throws -> (server: AgentCommandTests.Server, https: String, certificate: String, key: String, log: URL) {
        for tool in ["openssl", "curl"] { try TestMedia.require(tool) }
        let server = try await AgentCommandTests.Server(name)
        let (certificate, key) = try await TestMedia.offloaded { try Self.certificate("server", in: server.directory) }
        let log = server.directory.appendingPathComponent("serve.log")
        let site = server.directory.appendingPathComponent("site")
        try FileManager.default.createDirectory(at: site, withIntermediateDirectories: true)
        try Data(repeating: 0x5A, count: 2 << 20).write(to: site.appendingPathComponent("big.bin"))
        server.serveArguments = ["--tls-certificate", certificate, "--tls-key", key, "--log-file", log.path, "--origin", site.path, "--header-timeout", "1"] + extra
        try await server.start()
        return (server, "https://127.0.0.1:\(try #require(URL(string: server.url)?.port))", certificate, key, log)
    }

    @Test("HTTPS: HTTP/2 when the client offers it by ALPN, HTTP/1.1 when asked, the same answers; a client that does not trust the certificate is refused the handshake; plain HTTP to the port gets no answer; TLS 1.2 takes only ECDHE with AEAD suites, TLS 1.3 is taken; the listening line says https; the log names the certificate, not the key")
    func https() async throws {
        let (server, https, certificate, key, log) = try await Self.server("tls-https")
        defer { server.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            let h2 = try Self.curl(https + "/health", ["--cacert", certificate, "--http2"])
            #expect(h2.status == 200 && h2.version == "2", "\(h2)")
            let h1 = try Self.curl(https + "/health", ["--cacert", certificate, "--http1.1"])
            #expect(h1.status == 200 && h1.version == "1.1", "\(h1)")
            // A body over HTTP/2 too: the server's key set.
            let keys = try ProcessRunner.run(try #require(TestMedia.which("curl")), ["-s", "--http2", "--cacert", certificate, https + "/licenses/keys"])
            #expect(keys.stdout.contains("\"keys\""), "\(keys.stdout.prefix(200))")
            // A transfer of 2 s (2 MB at 1 MB/s) outlasts the 1 s header timeout, and the connection then serves the next
            // request (curl makes no new connection for it), over HTTP/2 and HTTP/1.1 alike.
            for version in ["--http2", "--http1.1"] {
                let slow = try ProcessRunner.run(try #require(TestMedia.which("curl")), [
                    "-s", version, "--cacert", certificate, "--limit-rate", "1m", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{num_connects};",
                    https + "/content/big.bin", "--next", version, "--cacert", certificate, "-o", "/dev/null", "-w", "%{http_code} %{num_connects}", https + "/health"])
                #expect(slow.stdout == "200 \(2 << 20) 1;200 0", "\(version): \(slow.stdout)")
            }
            // TLS 1.2 offers forward secrecy with AEAD only; TLS 1.3 is taken.
            let address = "127.0.0.1:\(try #require(URL(string: https)?.port))"
            func handshake(_ options: [String]) throws -> Bool {
                try ProcessRunner.run(try #require(TestMedia.which("openssl")), ["s_client", "-connect", address, "-brief"] + options).status == 0
            }
            for weak in ["AES128-SHA", "AES256-GCM-SHA384", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES256-SHA384"] {
                #expect(try !handshake(["-tls1_2", "-cipher", weak]), "TLS 1.2 took \(weak)")
            }
            for strong in ["ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-CHACHA20-POLY1305"] {
                #expect(try handshake(["-tls1_2", "-cipher", strong]), "TLS 1.2 refused \(strong)")
            }
            #expect(try handshake(["-tls1_3"]), "TLS 1.3 refused")
            let untrusted = try Self.curl(https + "/health", [])
            #expect(untrusted.status == 0 && untrusted.exit == 60, "curl: the certificate is not trusted: \(untrusted)")
            let plain = try Self.curl(server.url + "/health", [])
            #expect(plain.status == 0, "no HTTP answer on the HTTPS port: \(plain)")
            let text = try String(contentsOf: log, encoding: .utf8)
            #expect(text.contains("serve on https://") && text.contains("TLS certificate in use"), "\(text.suffix(600))")
            let keyText = try String(contentsOfFile: key, encoding: .utf8)
            let body = keyText.split(separator: "\n").filter { !$0.hasPrefix("-----") }.prefix(3)
            #expect(body.allSatisfy { !text.contains($0) }, "the log holds no line of the private key")
        }
    }

    @Test("SIGHUP reads the certificate again: new connections get the renewed one without a restart (the old one no longer verifies); a broken one is refused with a log line and the one in force stays")
    func reload() async throws {
        let (server, https, certificate, key, log) = try await Self.server("tls-reload")
        defer { server.stop() }
        let pid = try #require(server.process?.processIdentifier)
        try await TestMedia.offloaded { () throws -> Void in
            let old = server.directory.appendingPathComponent("old.pem").path
            try FileManager.default.copyItem(atPath: certificate, toPath: old)
            let renewed = try Self.certificate("renewed", in: server.directory)
            try FileManager.default.removeItem(atPath: certificate)
            try FileManager.default.removeItem(atPath: key)
            try FileManager.default.copyItem(atPath: renewed.certificate, toPath: certificate)
            try FileManager.default.copyItem(atPath: renewed.key, toPath: key)
            #expect(try Self.curl(https + "/health", ["--cacert", old]).status == 200, "before the signal the old certificate is in use")
            /// Whether the log says `words` within 10 s.
            func logged(_ words: String) -> Bool {
                for _ in 0..<100 {
                    if (try? String(contentsOf: log, encoding: .utf8))?.contains(words) == true { return true }
                    usleep(100_000)
                }
                return false
            }
            kill(pid, SIGHUP)
            #expect(logged("TLS certificate reloaded"))
            #expect(try Self.curl(https + "/health", ["--cacert", renewed.certificate]).status == 200, "the renewed certificate")
            let stale = try Self.curl(https + "/health", ["--cacert", old])
            #expect(stale.status == 0 && stale.exit == 60, "the old one is gone: \(stale)")

            // A broken certificate file: refused, and the renewed one stays in force.
            try "not a certificate\n".write(toFile: certificate, atomically: true, encoding: .utf8)
            kill(pid, SIGHUP)
            #expect(logged("TLS certificate not reloaded; the previous one stays in use"))
            #expect(try Self.curl(https + "/health", ["--cacert", renewed.certificate]).status == 200, "still served")
            #expect(server.process?.isRunning == true)
        }
    }

    @Test("the device agent over HTTPS: registration trusting the server's certificate (--trust-certificate), then a license acquired and the rights read with no option (the trust is kept in the data directory, 0600); without it, a clear network error; serve refuses a key that is not the certificate's, and one option without the other")
    func agent() async throws {
        let (server, https, certificate, _, _) = try await Self.server("tls-agent")
        defer { server.stop() }
        try await TestMedia.offloaded { () throws -> Void in
            let token = try server.token()
            let untrusted = server.directory.appendingPathComponent("untrusted").path
            let started = Date()
            let refused = try CLIRunner.run(["agent", "register", "--server", https, "--token", token, "--data-dir", untrusted])
            #expect(refused.status != 0 && refused.stderr.contains("127.0.0.1: its TLS certificate is not trusted"), "\(refused.stderr)")
            #expect(!refused.stderr.contains("BoringSSL"), "said in plain words: \(refused.stderr)")
            #expect(Date().timeIntervalSince(started) < 20, "said within seconds, not at the request's 30 s deadline")
            let device = server.directory.appendingPathComponent("device").path
            let registered = try CLIRunner.run(["agent", "register", "--server", https, "--token", token, "--data-dir", device, "--trust-certificate", certificate])
            #expect(registered.status == 0, "\(registered.stderr)")
            let kept = device + "/trusted-certificates.pem"
            #expect((try FileManager.default.attributesOfItem(atPath: kept)[.posixPermissions] as? Int) == 0o600)
            let acquired = try CLIRunner.run(["license", "acquire", "movie", "--token", token, "--data-dir", device])
            #expect(acquired.status == 0, "\(acquired.stderr)")
            let rights = try CLIRunner.run(["rights", "movie", "--data-dir", device])
            #expect(rights.status == 0 && rights.stdout.contains("valid"), "\(rights.stdout) \(rights.stderr)")

            // Serve: a key that is not the certificate's, and a certificate without its key.
            let other = try Self.certificate("other", in: server.directory)
            let mismatched = try CLIRunner.run(["serve", "--insecure-no-entitlement", "--data-dir", server.directory.appendingPathComponent("s2").path,
                                                "--port", "0", "--tls-certificate", certificate, "--tls-key", other.key])
            #expect(mismatched.status != 0 && mismatched.stderr.contains("is not the key of the certificate"), "\(mismatched.stderr)")
            let alone = try CLIRunner.run(["serve", "--insecure-no-entitlement", "--data-dir", server.directory.appendingPathComponent("s3").path,
                                           "--port", "0", "--tls-certificate", certificate])
            #expect(alone.status != 0 && alone.stderr.contains("--tls-certificate and --tls-key go together"), "\(alone.stderr)")
        }
    }
}
