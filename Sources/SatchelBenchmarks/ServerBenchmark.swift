import Foundation
import Hummingbird
import Logging
import SatchelBytes
import SatchelFairPlay
import SatchelLicensing
import SatchelProtection
import SatchelServer
import ServiceLifecycle

/// `satchel serve` under load from wrk on loopback: FairPlay CKCs and Clear Key licenses per second
/// with valid entitlement tokens, beside the in-process SPC→CKC rate of the same KSM.
struct ServerBenchmark {
    let seconds: Int
    let port = 18_480
    let rounds = 5

    /// One wrk run: requests per second, and the latency's median and 99th percentile (ms).
    struct Load {
        var rate, p50, p99: Double
    }

    /// The middle value (the upper one of an even count); the middle load by rate.
    static func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    static func median(_ loads: [Load]) -> Load { loads.sorted { $0.rate < $1.rate }[loads.count / 2] }

    func run() async throws {
        guard Tool.output(["wrk", "--version"]) != nil || Tool.output(["which", "wrk"]) != nil else {
            print("server benchmark skipped: wrk is not installed (apt-get install wrk)")
            return
        }
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("satchel-server-bench-\(UUID().uuidString)")
        let credentialsDirectory = FairPlayBenchmark.credentialsDirectory
        let certificate = Array(try Data(contentsOf: credentialsDirectory.appendingPathComponent("dev_certificate.der")))  // blocking-ok: set-up before the clock starts
        let dFunction = try DevelopmentDFunction(dask: SecretBytes(hex: "d87ce7a26081de2e8eb8acef3a6dc179", count: 16))
        let credential = try FairPlayCredential(certificate: certificate,
                                                privateKey: Array(try Data(contentsOf: credentialsDirectory.appendingPathComponent("dev_private_key.pem"))),  // blocking-ok: set-up before the clock starts
                                                dFunction: dFunction)
        let ksm = KeySecurityModule(configuration: .init(credentials: [credential]))
        let database = try await LicensingDatabase(dataDirectory: directory.path, url: nil)
        let store = FluentKeyStore(database: database, kek: try KeyEncryptionKey(SecretBytes.random(32)))
        let key = ContentKey.random()
        try await store.importKeys([key], assetID: "bench", fairPlayAssetID: "bench", policy: AssetPolicy(leaseSeconds: 600))
        let verifier = try await EntitlementVerifier(hmacSecret: SecureRandom.bytes(32))
        let token = try await verifier.sign(Entitlement(subject: "bench", asset: "bench", expires: Date().addingTimeInterval(3600)))
        let service = LicenseService(store: store, ksm: ksm, verifier: verifier)
        let app = LicenseServer.application(service: service, certificate: certificate, port: port)
        // Stopped gracefully (as SIGTERM stops `satchel serve`), not cancelled: a cancelled server logs errors on its way out.
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: Logger(label: "satchel.bench")))
        let server = Task { try await group.run() }
        defer { server.cancel() }
        try await Task.sleep(for: .milliseconds(500))

        let simulator = try DeviceSimulator(certificate: certificate, dFunction: dFunction)
        let (spc, _) = try simulator.makeSPC(.init(assetID: Array("bench".utf8),
                                                   playbackState: MediaPlaybackState(creationDate: 1, state: .readyToStart, sessionID: 1)))
        let spcFile = directory.appendingPathComponent("spc.bin")
        try Data(spc).write(to: spcFile)
        let clearKeyBody = String(decoding: ClearKey.Request(keyIDs: [key.keyID]).json, as: UTF8.self)

        // Interleaved rounds (the in-process ceiling on one core, then FairPlay and Clear Key over HTTP), so that a slow
        // moment of the machine falls on every row alike; each round is printed with the medians and the targets.
        let policy = try AssetPolicy(leaseSeconds: 600).fairPlayPolicy(contentKey: key.key, iv: key.iv)
        var inProcess: [Double] = [], fairPlay: [Load] = [], clearKey: [Load] = []
        for _ in 0..<rounds {
            let clock = ContinuousClock()
            let start = clock.now
            var count = 0
            while start.duration(to: clock.now) < .seconds(2) {
                _ = try await ksm.process(spc) { _ in policy }
                count += 1
            }
            inProcess.append(Double(count) / start.duration(to: clock.now).inSeconds)
            fairPlay.append(try await wrk(path: "/fps/license", token: token, bodyFile: spcFile.path, contentType: "application/octet-stream",
                                          directory: directory))
            clearKey.append(try await wrk(path: "/clearkey/license", token: token, body: clearKeyBody, contentType: "application/json",
                                          directory: directory))
        }
        let (records, transactions) = (await store.audit.written, await store.audit.transactions)
        // The server first (wrk leaves requests in flight when it stops), then the database their audit writes to.
        await group.triggerGracefulShutdown()
        _ = await server.result
        await database.shutdown()
        let shares = zip(fairPlay, inProcess).map { 100 * $0.rate / $1 }
        let (ceiling, fps, ck) = (Self.median(inProcess), Self.median(fairPlay), Self.median(clearKey))
        print("License server under wrk (2 threads, 32 connections, \(seconds) s, loopback, valid tokens); \(rounds) interleaved rounds")
        print(String(format: "Audit: %d records durable before their answers (journal), %d database transactions (%.1f records each)",
                     records, transactions, Double(records) / Double(max(transactions, 1))))
        print("round  in-process SPC→CKC   FairPlay over HTTP (share, p99)       Clear Key over HTTP (p99)")
        for round in 0..<rounds {
            print(String(format: "%5d  %12.0f /s   %8.0f /s (%3.0f %%, %6.1f ms)   %8.0f /s (%6.1f ms)", round + 1, inProcess[round],
                         fairPlay[round].rate, shares[round], fairPlay[round].p99, clearKey[round].rate, clearKey[round].p99))
        }
        print(String(format: "median %11.0f /s   %8.0f /s (%3.0f %%, %6.1f ms)   %8.0f /s (%6.1f ms)", ceiling, fps.rate, Self.median(shares), fps.p99,
                     ck.rate, ck.p99))
        let spread = { (loads: [Load]) -> Double in 100 * (1 - (loads.map(\.rate).min() ?? 0) / max(loads.map(\.rate).max() ?? 1, 1)) }
        print(String(format: "targets: every round's FairPlay share ≥ 80 %% (lowest %.0f %%); Clear Key ≥ 15,000 /s (lowest %.0f); p99 ≤ 20 ms FairPlay (highest %.1f), ≤ 10 ms Clear Key (highest %.1f); slowest round within 20 %% of the fastest (FairPlay %.0f %%, Clear Key %.0f %%)",
                     shares.min() ?? 0, clearKey.map(\.rate).min() ?? 0, fairPlay.map(\.p99).max() ?? 0, clearKey.map(\.p99).max() ?? 0,
                     spread(fairPlay), spread(clearKey)))
        try? FileManager.default.removeItem(at: directory)
    }

    /// Requests per second that wrk reaches POSTing one body, and the latency's median and 99th percentile (ms).
    private func wrk(path: String, token: String, body: String? = nil, bodyFile: String? = nil, contentType: String,
                     directory: URL) async throws -> Load {
        let script = directory.appendingPathComponent("\(path.replacingOccurrences(of: "/", with: "_")).lua")
        var lua = "wrk.method = \"POST\"\nwrk.headers[\"Authorization\"] = \"Bearer \(token)\"\nwrk.headers[\"Content-Type\"] = \"\(contentType)\"\n"
        if let bodyFile {
            lua += "local f = io.open(\"\(bodyFile)\", \"rb\")\nwrk.body = f:read(\"*all\")\nf:close()\n"
        } else if let body {
            lua += "wrk.body = [[\(body)]]\n"
        }
        lua += "done = function(summary, latency, requests)\n  io.write(string.format(\"errors %d %d %d\\n\", summary.errors.status, summary.errors.connect, summary.errors.timeout))\n"
            + "  io.write(string.format(\"latency %d %d\\n\", latency:percentile(50), latency:percentile(99)))\nend\n"
        try lua.write(to: script, atomically: true, encoding: .utf8)
        guard let output = await Tool.outputOffPool(["wrk", "-t2", "-c32", "-d\(seconds)s", "-s", script.path, "http://127.0.0.1:\(port)\(path)"]) else {
            throw BenchmarkError(message: "wrk failed")
        }
        if let errors = output.split(separator: "\n").first(where: { $0.hasPrefix("errors") }), errors != "errors 0 0 0" {
            throw BenchmarkError(message: "wrk saw failed requests (\(errors)): the benchmark would measure errors")
        }
        guard let line = output.split(separator: "\n").first(where: { $0.contains("Requests/sec") }),
              let rate = line.split(separator: " ").last.flatMap({ Double($0) }) else { throw BenchmarkError(message: "cannot read wrk's output") }
        // wrk's percentiles are in microseconds.
        let latency = output.split(separator: "\n").first { $0.hasPrefix("latency ") }?.split(separator: " ").dropFirst().compactMap { Double($0) } ?? []
        return Load(rate: rate, p50: (latency.first ?? 0) / 1000, p99: (latency.last ?? 0) / 1000)
    }
}
