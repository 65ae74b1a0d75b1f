import Foundation
import SatchelBytes
import SatchelFairPlay
import SatchelTestSupport
import Testing

@Suite("satchel fps")
struct FPSCommandTests {
    let cert = "\(CLIRunner.credentials)/dev_certificate.der"
    let key = "\(CLIRunner.credentials)/dev_private_key.pem"

    func developmentParser() throws -> SPCParser {
        let credential = try FairPlayCredential(
            certificate: Array(try Data(contentsOf: URL(fileURLWithPath: cert))),
            privateKey: Array(try Data(contentsOf: URL(fileURLWithPath: key))),
            dFunction: DevelopmentDFunction(dask: SecretBytes(hex: CLIRunner.dask, count: 16)))
        return SPCParser(credentials: [credential])
    }

    @Test("fps ckc answers an Apple SPC with a CKC carrying the key, IV and lease")
    func ckc() async throws {
        try await TestMedia.offloaded {
            let dir = try CLIRunner.temporaryDirectory()
            let out = dir.appendingPathComponent("ckc.bin").path
            let spcPath = "\(CLIRunner.vectors)/FPS-Lease/spc2.bin"
            let result = try CLIRunner.run([
                "fps", "ckc", "--spc", spcPath, "--certificate", cert, "--private-key", key, "--dask", CLIRunner.dask,
                "--content-key", "31313131313131313131313131313131", "--content-iv", "546865517569636b42726f776e466f78",
                "--lease-seconds", "120", "--hdcp", "type1", "--out", out,
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let spc = try developmentParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: spcPath))))
            let ckc = try CKC.open(Array(try Data(contentsOf: URL(fileURLWithPath: out))), for: spc)
            #expect(ckc.contentKey.bytes == Array(repeating: 0x31, count: 16))
            #expect(ckc.duration == .lease(120))
            #expect(ckc.hdcp == .type1)
            #expect(!result.stdout.contains("3131313131"), "the content key is never printed")
        }
    }

    @Test("fps ckc: persist and dual-expiry options select the right TLLVs")
    func ckcPersistAndOffline() async throws {
        try await TestMedia.offloaded {
            let dir = try CLIRunner.temporaryDirectory()
            let spcPath = "\(CLIRunner.vectors)/FPS-Lease/spc1.bin"
            let spc = try developmentParser().parse(Array(try Data(contentsOf: URL(fileURLWithPath: spcPath))))
            let base = ["fps", "ckc", "--spc", spcPath, "--certificate", cert, "--private-key", key, "--dask", CLIRunner.dask,
                        "--content-key", "31313131313131313131313131313131", "--content-iv", "546865517569636b42726f776e466f78"]
            let persisted = dir.appendingPathComponent("p.bin").path
            #expect(try CLIRunner.run(base + ["--persist", "--persist-seconds", "600", "--out", persisted]).status == 0)
            let p = try CKC.open(Array(try Data(contentsOf: URL(fileURLWithPath: persisted))), for: spc)
            #expect(p.duration == .persistable(seconds: 600))
            let unlimited = dir.appendingPathComponent("u.bin").path
            #expect(try CLIRunner.run(base + ["--persist", "--out", unlimited]).status == 0)
            #expect(try CKC.open(Array(try Data(contentsOf: URL(fileURLWithPath: unlimited))), for: spc).duration?.keyType == .persistableUnlimited)
            // Apple's SPC has no Capabilities TLLV: as the reference KSM, it gets the Offline Key TLLV; the strict option refuses it.
            let offlineArguments = ["--offline-content-id", String(repeating: "ab", count: 16), "--storage-seconds", "10", "--playback-seconds", "5"]
            let offline = dir.appendingPathComponent("o.bin").path
            #expect(try CLIRunner.run(base + offlineArguments + ["--out", offline]).status == 0)
            #expect(try CKC.open(Array(try Data(contentsOf: URL(fileURLWithPath: offline))), for: spc).offlineKey?.playbackSeconds == 5)
            let refused = try CLIRunner.run(base + offlineArguments + ["--require-offline-capability", "--out", dir.appendingPathComponent("s.bin").path])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("Offline Key"))
            let conflict = try CLIRunner.run(base + ["--offline-content-id", String(repeating: "ab", count: 16), "--storage-seconds", "10",
                                                     "--playback-seconds", "5", "--lease-seconds", "5", "--out", "/dev/null"])
            #expect(conflict.status != 0)
        }
    }

    @Test("fps inspect --json reports the SPC, the CKC and both checks")
    func inspectJSON() async throws {
        try await TestMedia.offloaded {
            let result = try CLIRunner.run([
                "fps", "inspect", "--spc", "\(CLIRunner.vectors)/FPS/spc1.bin", "--ckc", "\(CLIRunner.vectors)/FPS/ckc1.bin",
                "--private-key", key, "--dask", CLIRunner.dask, "--json",
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
            let spc = try #require(object["spc"] as? [String: Any])
            let ckc = try #require(object["ckc"] as? [String: Any])
            #expect(spc["assetID"] as? String == "aabbccddeeffaabbccddeeffaabbccddeeff")
            #expect(spc["transactionID"] as? String == "1473e5cc53e1e5d6")
            #expect(ckc["contentIV"] as? String == "d5fbd6b82ed93e4ef98ae40931ee33b7")
            #expect(ckc["r1Matches"] as? Bool == true)
            #expect(ckc["returnedTagsMatch"] as? Bool == true)
            #expect(!result.stdout.contains("afb46e7bf5f31596"), "the session key is never printed")
            #expect(!result.stdout.contains("3b3b3b3b3b3b3b3b"), "the content key is never printed")
        }
    }

    @Test("errors are one line on stderr with a non-zero exit, and never echo a secret")
    func errors() async throws {
        try await TestMedia.offloaded {
            let wrongDASk = "00112233445566778899aabbccddeeff"
            let cases: [[String]] = [
                ["fps", "ckc", "--spc", "\(CLIRunner.vectors)/FPS/spc1.bin", "--certificate", cert, "--private-key", key, "--dask", wrongDASk,
                 "--content-key", "31313131313131313131313131313131", "--content-iv", "546865517569636b42726f776e466f78", "--out", "/dev/null"],
                ["fps", "ckc", "--spc", cert, "--certificate", cert, "--private-key", key, "--dask", wrongDASk,
                 "--content-key", "31313131313131313131313131313131", "--content-iv", "546865517569636b42726f776e466f78", "--out", "/dev/null"],
                ["fps", "ckc", "--spc", "/nonexistent", "--certificate", cert, "--private-key", key, "--dask", wrongDASk,
                 "--content-key", "3131", "--content-iv", "546865517569636b42726f776e466f78", "--out", "/dev/null"],
                ["fps", "inspect", "--spc", "\(CLIRunner.vectors)/FPS/spc1.bin", "--private-key", cert, "--dask", wrongDASk],
                ["fps", "inspect", "--spc", "\(CLIRunner.vectors)/FPS/spc1.bin", "--private-key", key],
                ["fps", "nonsense"],
            ]
            for arguments in cases {
                let result = try CLIRunner.run(arguments)
                #expect(result.status != 0, "\(arguments)")
                #expect(result.stderr.hasPrefix("satchel: error: "), "\(result.stderr)")
                #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
                #expect(!result.stderr.contains(wrongDASk))
            }
        }
    }

    @Test("simulate spc → fps ckc → simulate open recovers the key")
    func simulateFlow() async throws {
        try await TestMedia.offloaded {
            let dir = try CLIRunner.temporaryDirectory()
            let spc = dir.appendingPathComponent("a.spc").path, session = dir.appendingPathComponent("a.json").path
            let ckc = dir.appendingPathComponent("a.ckc").path
            let contentKey = "00112233445566778899aabbccddeeff"
            let made = try CLIRunner.run(["fps", "simulate", "spc", "--certificate", cert, "--dask", CLIRunner.dask, "--asset-id", "movie-7",
                                          "--playback-state", "ready", "--capabilities", "offline", "--streaming", "airplay",
                                          "--undefined-tllv", "0102030405060708:beef", "--return-tag", "0102030405060708",
                                          "--out", spc, "--session", session])
            #expect(made.status == 0, "\(made.stderr)")
            let mode = try FileManager.default.attributesOfItem(atPath: session)[.posixPermissions] as? Int
            #expect(mode == 0o600)
            let deny = try CLIRunner.run(["fps", "ckc", "--spc", spc, "--certificate", cert, "--private-key", key, "--dask", CLIRunner.dask,
                                          "--content-key", contentKey, "--content-iv", contentKey, "--deny-airplay", "--out", ckc])
            #expect(deny.status != 0 && deny.stderr.contains("airplay"))
            let built = try CLIRunner.run(["fps", "ckc", "--spc", spc, "--certificate", cert, "--private-key", key, "--dask", CLIRunner.dask,
                                           "--content-key", contentKey, "--content-iv", contentKey, "--rental-seconds", "3600", "--out", ckc])
            #expect(built.status == 0, "\(built.stderr)")
            let opened = try CLIRunner.run(["fps", "simulate", "open", "--ckc", ckc, "--session", session, "--expect-content-key", contentKey])
            #expect(opened.status == 0, "\(opened.stderr)")
            #expect(opened.stdout.contains("rental 3600 s"))
            let wrong = try CLIRunner.run(["fps", "simulate", "open", "--ckc", ckc, "--session", session, "--expect-content-key", String(repeating: "0", count: 32)])
            #expect(wrong.status != 0)
        }
    }

    @Test("fps roundtrip succeeds with the development credentials")
    func roundTrip() async throws {
        try await TestMedia.offloaded {
            let result = try CLIRunner.run(["fps", "roundtrip", "--certificate", cert, "--private-key", key, "--dask", CLIRunner.dask])
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout.contains("round trip OK"))
            #expect(result.stdout.contains("check R1 matches: yes"))
        }
    }
}
