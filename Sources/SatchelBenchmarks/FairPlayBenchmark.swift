import Crypto
import CryptoExtras
import Foundation
import SatchelBytes
import SatchelFairPlay

/// SPC → CKC per second on one core, against the raw RSA-1024 OAEP private-key decryption
/// rate of the same library (the ceiling: every SPC needs one), and `openssl speed` as an
/// outside reference.
struct FairPlayBenchmark {
    let seconds: Double
    /// Also print the cost of each step beyond RSA.
    var parts = false

    /// Where the development credentials live: `../shared/conformance/fairplay/credentials`.
    static var credentialsDirectory: URL {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.deletingLastPathComponent().appendingPathComponent("shared/conformance/fairplay/credentials")
    }

    func run() async throws {
        let certificate = Array(try Data(contentsOf: Self.credentialsDirectory.appendingPathComponent("dev_certificate.der")))  // blocking-ok: set-up before the clock starts
        let keyPEM = try String(contentsOf: Self.credentialsDirectory.appendingPathComponent("dev_private_key.pem"), encoding: .utf8)
        let dFunction = try DevelopmentDFunction(dask: SecretBytes(hex: "d87ce7a26081de2e8eb8acef3a6dc179", count: 16))
        let credential = try FairPlayCredential(certificate: certificate, privateKey: Array(keyPEM.utf8), dFunction: dFunction)
        let ksm = KeySecurityModule(configuration: .init(credentials: [credential]))
        let simulator = try DeviceSimulator(certificate: certificate, dFunction: dFunction)
        let spcs = try (0..<64).map { index in
            try simulator.makeSPC(.init(
                assetID: Array("asset-\(index)".utf8),
                playbackState: MediaPlaybackState(creationDate: 1, state: .readyToStart, sessionID: UInt64(index)),
                capabilities: Capabilities(hdcpEnforcement: true, offlineKey: true),
                extraTLLVs: (0..<12).map { TLLV(tag: TLLVTag(0x100 + UInt64($0)), value: SecureRandom.bytes(24)) },
                returnTags: [.assetID, .transactionID, TLLVTag(0x100), TLLVTag(0x101)])).spc
        }
        let policy = try ContentKeyPolicy(contentKey: SecretBytes.random(16), contentIV: SecureRandom.bytes(16),
                                          duration: .leaseAndRental(lease: 600, rental: 86_400), hdcp: .type0)

        // The ceiling: RSA-OAEP-SHA1 private-key decryption of the same 128-byte field, same library.
        let privateKey = try _RSA.Encryption.PrivateKey(unsafePEMRepresentation: keyPEM)
        let wrapped = spcs.map { Data($0[24..<152]) }
        // Short interleaved rounds, so that machine noise hits every figure alike; medians are reported.
        var rsaRates: [Double] = [], ksmRates: [Double] = [], parseRates: [Double] = [], ratios: [Double] = []
        let rounds = max(Int(seconds * 4), 3)
        for _ in 0..<rounds {
            let rsa = try await measure(0.25) { index in _ = try privateKey.decrypt(wrapped[index % wrapped.count], padding: .PKCS1_OAEP) }
            let ksmRound = try await measure(0.25) { index in _ = try await ksm.process(spcs[index % spcs.count]) { _ in policy } }
            parseRates.append(try await measure(0.1) { index in _ = try ksm.parse(spcs[index % spcs.count]) })
            rsaRates.append(rsa)
            ksmRates.append(ksmRound)
            ratios.append(ksmRound / rsa)
        }
        if parts {
            // Where the time beyond RSA goes, per request.
            let parsed = try spcs.map { try ksm.parse($0) }
            let payloads = parsed.map { TLLVCodec.encode($0.tllvs.blocks) }
            let builder = CKCBuilder()
            print(row("part: SPC header", try await measure(0.5) { i in _ = try SPCParser.readHeader(spcs[i % 64]) }))
            print(row("part: TLLV payload parse", try await measure(0.5) { i in _ = try TLLVCodec.parse(payloads[i % 64]) }))
            print(row("part: protocol checks", try await measure(0.5) { i in _ = try ksm.check(parsed[i % 64], now: Date()) }))
            print(row("part: CKC build", try await measure(0.5) { i in _ = try builder.build(for: parsed[i % 64], policy: policy) }))
            print(row("part: 256 random bytes", try await measure(0.5) { _ in _ = SecureRandom.Pool(capacity: 256) }))
        }
        let rsaRate = median(rsaRates), ksmRate = median(ksmRates), parseRate = median(parseRates)

        print("FairPlay KSM, one core")
        print(row("RSA-1024 OAEP decrypt (swift-crypto, the ceiling)", rsaRate))
        print(row("SPC parse + checks (Satchel)", parseRate))
        print(row("SPC → CKC (Satchel)", ksmRate))
        print(String(format: "SPC → CKC / RSA ceiling: %.1f %% (median of %d paired rounds; target ≥ 90 %%)", 100 * median(ratios), rounds))
        if let openssl = opensslRSA1024DecryptRate() {
            print(row("RSA-1024 private op (openssl speed, reference)", openssl))
        }
    }

    /// Operations per second of `body` on this thread over `seconds`.
    private func measure(_ duration: Double, _ body: (Int) async throws -> Void) async throws -> Double {
        for index in 0..<50 { try await body(index) }  // warm up
        let clock = ContinuousClock()
        let start = clock.now
        let deadline = start.advanced(by: .milliseconds(Int64(duration * 1000)))
        var count = 0
        while clock.now < deadline {
            for _ in 0..<100 {
                try await body(count)
                count += 1
            }
        }
        let elapsed = start.duration(to: clock.now)
        return Double(count) / elapsed.inSeconds
    }

    private func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.isEmpty ? 0 : sorted[sorted.count / 2]
    }

    private func row(_ label: String, _ rate: Double) -> String {
        label.padding(toLength: 52, withPad: " ", startingAt: 0) + String(format: "%10.0f /s", rate)
    }

    /// Private-key operations per second from `openssl speed rsa1024` on one core, if openssl is installed.
    private func opensslRSA1024DecryptRate() -> Double? {
        guard let output = Tool.output(["openssl", "speed", "-seconds", String(Int(max(seconds, 1))), "rsa1024"]) else { return nil }
        // "rsa 1024 bits 0.000045s 0.000003s  22000.0 330000.0": the first rate is sign (private-key) ops.
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("rsa 1024 bits") }) else { return nil }
        let fields = line.split(separator: " ").compactMap { Double($0) }
        return fields.count >= 2 ? fields[fields.count - 2] : nil
    }
}
