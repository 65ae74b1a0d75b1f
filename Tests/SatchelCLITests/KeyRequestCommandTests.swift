import Foundation
import SatchelBytes
import SatchelTestSupport
import Testing

/// `satchel license request`: the agent as a FairPlay, Clear Key and AES-128 client, against a real
/// `satchel serve` behind a recording proxy on loopback, so each test sees what went over the wire.
@Suite(.serialized) struct KeyRequestCommandTests {
    static let customData = "<CustomData><Account>acme</Account></CustomData>"

    static func fairPlayServer() async throws -> (AgentCommandTests.Server, RecordingProxy) {
        let server = try await AgentCommandTests.Server("key-requests")
        let credentials = FairPlayFixtures.root.appendingPathComponent("credentials")
        server.serveArguments = ["--fps-certificate", credentials.appendingPathComponent("dev_certificate.der").path,
                                 "--fps-private-key", credentials.appendingPathComponent("dev_private_key.pem").path,
                                 "--fps-dask", CLIRunner.dask]
        try await server.start()
        return (server, try await RecordingProxy.start(upstream: server.url))
    }

    @Test("fairplay: the certificate and the SPC go with the custom headers, custom data and token in each shape; the CKC opens to the content key")
    func fairPlay() async throws {
        let (server, proxy) = try await Self.fairPlayServer()
        defer { server.stop(); proxy.stop() }
        try await TestMedia.offloaded {
            let token = try server.token(persistent: false)
            let base = ["license", "request", "fairplay", "--url", proxy.baseURL + "/fps/license", "--certificate-url", proxy.baseURL + "/fps/certificate",
                        "--dask", CLIRunner.dask, "--asset-id", "movie", "--header", "X-Vendor: acme", "--custom-data", Self.customData,
                        "--expect-content-key", server.contentKey]
            for shape in ["json", "apple", "raw"] {
                let result = try CLIRunner.run(base + ["--shape", shape, "--token", token])
                #expect(result.status == 0, "\(shape): \(result.stderr)")
                #expect(result.stdout.contains("content key matches the expected key") && !result.stdout.contains(server.contentKey))
                #expect(!result.stdout.contains(token) && !result.stderr.contains(token))
            }
            let requests = proxy.requests
            let certificates = requests.filter { $0.path == "/fps/certificate" }, licenses = requests.filter { $0.path == "/fps/license" }
            #expect(certificates.count == 3 && certificates.allSatisfy { $0.header("X-Vendor") == "acme" })
            #expect(licenses.count == 3 && licenses.allSatisfy { $0.header("X-Vendor") == "acme" && $0.header("Authorization") == "Bearer \(token)" })
            guard licenses.count == 3 else { return }  // the shapes below are read by position
            // JSON bodies carry the custom data as a member; the raw SPC carries it in a header, base64.
            #expect(licenses[0].json?["customData"] as? String == Self.customData && licenses[0].json?["assetId"] as? String == "movie")
            #expect(licenses[1].json?["customData"] as? String == Self.customData && licenses[1].json?["fairplay-streaming-request"] != nil)
            #expect(licenses[2].header("X-Satchel-Custom-Data") == Data(Self.customData.utf8).base64EncodedString())
            #expect(licenses[2].header("Content-Type") == "application/octet-stream" && licenses[2].body.starts(with: [0, 0, 0, 1]))

            // The token in a header of the server's choosing (seed 001's license token): this server wants a bearer token, so it refuses.
            let elsewhere = try CLIRunner.run(base + ["--token", token, "--token-header", "X-AxDRM-Message"])
            #expect(elsewhere.status != 0 && elsewhere.stderr.contains("missing-entitlement") && !elsewhere.stderr.contains(token), "\(elsewhere.stderr)")
            let last = try #require(proxy.requests.last)
            #expect(last.header("X-AxDRM-Message") == token && last.header("Authorization") == nil)
        }
    }

    @Test("clearkey and aes128: the keys come back (written only where asked, mode 0600), the extras go over the wire; refusals and bad input are clear errors")
    func clearKeyAndAES() async throws {
        let (server, proxy) = try await Self.fairPlayServer()
        defer { server.stop(); proxy.stop() }
        try await TestMedia.offloaded {
            let token = try server.token(persistent: true)
            let kid = "7c3e9a14b2d05f6e8a1c4d7b2e9f0a63"
            let keys = server.directory.appendingPathComponent("granted.json").path
            let clear = try CLIRunner.run(["license", "request", "clearkey", "--url", proxy.baseURL + "/clearkey/license", "--kid", kid, "--persistent",
                                           "--token", token, "--custom-data", Self.customData, "--header", "X-Vendor: acme", "--keys-out", keys])
            #expect(clear.status == 0, "\(clear.stderr)")
            #expect(clear.stdout.contains("1 of 1 key (persistent-license)") && clear.stdout.contains("key \(kid)") && !clear.stdout.contains(server.contentKey))
            #expect(try String(contentsOfFile: keys, encoding: .utf8).contains(server.contentKey))
            #expect((try FileManager.default.attributesOfItem(atPath: keys)[.posixPermissions] as? Int) == 0o600)
            let sent = try #require(proxy.requests.last)
            #expect(sent.json?["customData"] as? String == Self.customData && sent.json?["type"] as? String == "persistent-license")
            #expect(sent.json?["kids"] as? [String] == [Base64URL.encode(try Hex.decode(kid, count: 16))] && sent.header("X-Vendor") == "acme")

            let keyFile = server.directory.appendingPathComponent("aes.key").path
            let aes = try CLIRunner.run(["license", "request", "aes128", "--url", proxy.baseURL + "/keys/\(kid)", "--token", token,
                                         "--custom-data", Self.customData, "--key-out", keyFile])
            #expect(aes.status == 0 && aes.stdout.contains("AES-128 key: 16 bytes"), "\(aes.stderr)")
            #expect(Hex.encode(Array(try Data(contentsOf: URL(fileURLWithPath: keyFile)))) == server.contentKey)
            #expect(proxy.requests.last?.header("X-Satchel-Custom-Data") == Data(Self.customData.utf8).base64EncodedString())

            let refused = try CLIRunner.run(["license", "request", "clearkey", "--url", proxy.baseURL + "/clearkey/license", "--kid", kid])
            #expect(refused.status != 0 && refused.stderr.contains("401") && refused.stderr.contains("missing-entitlement"), "\(refused.stderr)")
            let unknown = try CLIRunner.run(["license", "request", "aes128", "--url", proxy.baseURL + "/keys/00000000000000000000000000000000", "--token", token])
            #expect(unknown.status != 0 && unknown.stderr.contains("404"), "\(unknown.stderr)")
            for bad in [["--header", "no colon here"], ["--header", "Bad Name: x"], ["--url", "ftp://example.com/k"], ["--token", "two words"]] {
                let result = try CLIRunner.run(["license", "request", "aes128", "--url", proxy.baseURL + "/keys/\(kid)"] + bad)
                #expect(result.status != 0 && !result.stderr.isEmpty && !result.stderr.contains("Fatal"), "\(bad): \(result.stderr)")
            }
        }
    }
}
