import Foundation
import SatchelBytes
import SatchelDevice
import SatchelFairPlay
import SatchelTestSupport
import Testing

/// FairPlay downloads end to end on Linux (issue 51 §1): seed 001's offline FairPlay player ("a persistable key
/// requested with the SPC, the CKC stored beside the download, played offline later") and seed 003's FairPlay
/// `protectionType`, with Satchel's software FairPlay client and Apple's development credentials.
@Suite(.serialized) struct FairPlayDownloadTests {
    static let credentials = FairPlayFixtures.root.appendingPathComponent("credentials")

    /// A license server with FairPlay, an origin, a 4 s input, a registered device.
    static func stage(_ name: String) async throws -> (server: AgentCommandTests.Server, origin: TestOrigin, site: URL, input: URL, data: String) {
        let world = try await PlayCommandTests.stage(name)
        world.server.stop()
        world.server.serveArguments = ["--fps-certificate", credentials.appendingPathComponent("dev_certificate.der").path,
                                       "--fps-private-key", credentials.appendingPathComponent("dev_private_key.pem").path,
                                       "--fps-dask", CLIRunner.dask]
        try await world.server.start()
        let token = try await world.server.token()
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["agent", "register", "--server", world.server.url, "--token", token, "--data-dir", world.data]).status == 0)
        }
        return world
    }

    /// `download add URL --license --fps-certificate … --fps-simulator-dask …` as asset `id`.
    static func addFairPlay(_ url: String, id: String, token: String, data: String) throws -> CLIRunner.Result {
        try CLIRunner.run(["download", "add", url, "--data-dir", data, "--id", id, "--license", "--token", token,
                           "--fps-certificate", credentials.appendingPathComponent("dev_certificate.der").path, "--fps-simulator-dask", CLIRunner.dask])
    }

    @Test("seed 001 \"persistable keys … played offline\": SAMPLE-AES TS and CMAF cbcs signalled for FairPlay, downloaded with a FairPlay key (an SPC from the software client, the CKC kept sealed, owner-only), play offline through the proxy packet for packet with the clear package; deleted, a Sync SPC reaches the server's records and the key is gone")
    func offlineLoop() async throws {
        let (server, origin, site, input, data) = try await Self.stage("fairplay-downloads")
        defer { server.stop(); origin.stop() }
        let token = try await server.token()
        try await TestMedia.offloaded { () throws -> Void in
            try PlayCommandTests.package(input, into: site.appendingPathComponent("clear-ts"), format: "hls-ts")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("clear-cmaf"), format: "cmaf")
            // A persistable key (the Key Duration TLLV), and one with dual expiry (the Offline Key TLLV: storage, then playback).
            try PlayCommandTests.package(input, into: site.appendingPathComponent("fps-ts"), format: "hls-ts", scheme: "sample-aes", asset: "fps-ts",
                                         server: server, offline: true, policy: ["--persist"], drm: "fairplay")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("fps-cmaf"), format: "cmaf", scheme: "cbcs", asset: "fps-cmaf",
                                         server: server, offline: true, policy: ["--offline-content-id", String(repeating: "0f", count: 16),
                                                                                 "--storage-seconds", "86400", "--playback-seconds", "3600"], drm: "fairplay")
            for id in ["fps-ts", "fps-cmaf"] {
                let added = try Self.addFairPlay(origin.url("\(id)/master.m3u8"), id: id, token: token, data: data)
                #expect(added.status == 0, "\(id): \(added.stderr)")
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            // Two keys kept, sealed: neither the content key nor the DASk in the clear, owner-only.
            let folder = URL(fileURLWithPath: data).appendingPathComponent("fairplay")
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(files.count == 2, "\(files)")
            for file in files {
                let path = folder.appendingPathComponent(file).path
                let text = try String(contentsOfFile: path, encoding: .utf8)
                // The record's field names are not in the clear either (a quote never occurs in sealed text; the letters "ckc" may, by chance).
                #expect(!text.contains(server.contentKey) && !text.contains(CLIRunner.dask) && !text.contains("\"ckc\"") && !text.contains("\"assetID\""), "sealed")
                #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
            }
            let listed = try CLIRunner.run(["download", "list", "--data-dir", data]).stdout
            #expect(!listed.contains(CLIRunner.dask) && !listed.contains(token))
        }
        origin.stop()
        server.stop()  // offline from here on
        for (id, clear) in [("fps-ts", "clear-ts"), ("fps-cmaf", "clear-cmaf")] {
            let expected = try await TestMedia.offloaded { try TestMedia.packetHashes(site.appendingPathComponent("\(clear)/master.m3u8").path) }
            let player = try await TestMedia.offloaded { try PlayCommandTests.Player([id, "--data-dir", data]) }
            guard !player.url.isEmpty else {
                Issue.record("\(id): the player did not start: \(player.stop().stderr)")
                continue
            }
            let played = try await TestMedia.offloaded { () -> [String] in
                do { return try TestMedia.packetHashes(player.url) } catch {
                    Issue.record("\(id): \(error): \(player.stop().stderr.suffix(1500))")
                    return []
                }
            }
            #expect(!expected.isEmpty && played == expected, "\(id): \(played.count) packets vs \(expected.count)")
            let stopped = try await TestMedia.offloaded { player.stop() }
            #expect(stopped.status == 0, "\(id): \(stopped.stderr)")
        }

        // Deleted with the server back: the Sync SPC is recorded, and the key is forgotten.
        try await server.start()
        try await TestMedia.offloaded { () throws -> Void in
            let removed = try CLIRunner.run(["download", "remove", "fps-cmaf", "--data-dir", data])
            #expect(removed.status == 0, "\(removed.stderr)")
            let files = try FileManager.default.contentsOfDirectory(atPath: URL(fileURLWithPath: data).appendingPathComponent("fairplay").path)
            #expect(files.count == 1, "the deleted download's key is gone: \(files)")
        }
        server.stop()
        let synced = try await TestMedia.offloaded { () throws -> String in
            try TestMedia.run("python3", ["-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM satchel_syncs').fetchone()[0])",
                                          URL(fileURLWithPath: server.data).appendingPathComponent("satchel-audit.sqlite").path])
        }
        #expect(synced.trimmingCharacters(in: .whitespacesAndNewlines) == "1", "one Sync SPC in the server's records: \(synced)")
    }

    @Test("a CKC answers one SPC of one device: the software client refuses the answer to another device's request, and to another of its own; the key opens only with the request that asked for it, its rights read from the CKC (a persistable key, dual expiry)")
    func ckcOfAnotherRequest() async throws {
        let certificate = try FairPlayFixtures.certificate()
        let dask = try SecretBytes(hex: FairPlayFixtures.developmentDASk, count: 16)
        let ksm = KeySecurityModule(configuration: .init(credentials: [try FairPlayCredential(certificate: certificate, privateKey: try FairPlayFixtures.privateKeyPEM(),
                                                                                               dFunction: DevelopmentDFunction(dask: dask))]))
        let contentKey = SecretBytes.random(16), iv = SecureRandom.bytes(16)
        let policy = try ContentKeyPolicy(contentKey: contentKey, contentIV: iv,
                                          offlineKey: try OfflineKeyPolicy(contentID: Array(repeating: 7, count: 16), storageSeconds: 86_400, playbackSeconds: 3_600))
        let mine = try SimulatedFairPlayDevice(certificate: certificate, dask: dask, hu: SimulatedFairPlayDevice.anonymizedID(of: "device-a"))
        let theirs = try SimulatedFairPlayDevice(certificate: certificate, dask: dask, hu: SimulatedFairPlayDevice.anonymizedID(of: "device-b"))
        let asked = try mine.request(assetID: "movie", persistable: true)
        let ckc = try await ksm.process(asked.spc) { _ in policy }.ckc
        let key = try mine.open(ckc: ckc, context: asked.context)
        #expect(key.key == contentKey && key.iv == iv && key.persistent && key.rentalSeconds == nil && key.leaseSeconds == nil)
        #expect(key.storageSeconds == 86_400 && key.playbackSeconds == 3_600 && key.offlineContentID == Array(repeating: 7, count: 16))
        let other = try theirs.request(assetID: "movie", persistable: true)
        #expect(throws: (any Error).self, "another device's request") { try theirs.open(ckc: ckc, context: other.context) }
        let again = try mine.request(assetID: "movie", persistable: true)
        #expect(throws: (any Error).self, "another request of the same device") { try mine.open(ckc: ckc, context: again.context) }
        #expect(SimulatedFairPlayDevice.anonymizedID(of: "device-a") == SimulatedFairPlayDevice.anonymizedID(of: "device-a"), "a device's ID is stable")
    }

    @Test("seed 004's persistable key limits: a key persisted for 2 s refuses to play once they are over (expired); a kept key copied into another device's data directory holds no rights there (sealed with the first device's key)")
    func expiredAndCopied() async throws {
        let (server, origin, site, input, data) = try await Self.stage("fairplay-expiry")
        defer { server.stop(); origin.stop() }
        let token = try await server.token()
        let other = site.deletingLastPathComponent().appendingPathComponent("other-device").path
        try await TestMedia.offloaded { () throws -> Void in
            try PlayCommandTests.package(input, into: site.appendingPathComponent("short"), format: "hls-ts", scheme: "sample-aes", asset: "short",
                                         server: server, offline: true, policy: ["--persist", "--persist-seconds", "2"], drm: "fairplay")
            try PlayCommandTests.package(input, into: site.appendingPathComponent("long"), format: "hls-ts", scheme: "sample-aes", asset: "long",
                                         server: server, offline: true, policy: ["--persist"], drm: "fairplay")
            for id in ["short", "long"] {
                #expect(try Self.addFairPlay(origin.url("\(id)/master.m3u8"), id: id, token: token, data: data).status == 0)
            }
            let run = try CLIRunner.run(["download", "run", "--data-dir", data])
            #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
            // A second registered device, holding a copy of the first one's kept keys and downloads.
            #expect(try CLIRunner.run(["agent", "register", "--server", server.url, "--token", token, "--data-dir", other]).status == 0)
            #expect(try Self.addFairPlay(origin.url("long/master.m3u8"), id: "long", token: token, data: other).status == 0)
            #expect(try CLIRunner.run(["download", "run", "--data-dir", other]).status == 0)
            let mine = URL(fileURLWithPath: data).appendingPathComponent("fairplay"), theirs = URL(fileURLWithPath: other).appendingPathComponent("fairplay")
            for file in try FileManager.default.contentsOfDirectory(atPath: theirs.path) { try FileManager.default.removeItem(at: theirs.appendingPathComponent(file)) }
            for file in try FileManager.default.contentsOfDirectory(atPath: mine.path) {
                try FileManager.default.copyItem(at: mine.appendingPathComponent(file), to: theirs.appendingPathComponent(file))
            }
        }
        try await Task.sleep(for: .seconds(3))
        try await TestMedia.offloaded { () throws -> Void in
            // With the backplane in reach (a stream slot granted), the key's own rights refuse; out of reach, the
            // stream-slot rule does first (an expired key does not allow offline play).
            let short = try CLIRunner.run(["play", "short", "--data-dir", data, "--exec", "true"])
            #expect(short.status != 0 && short.stderr.contains("expired"), "\(short.stderr)")
            let copied = try CLIRunner.run(["play", "long", "--data-dir", other, "--exec", "true"])
            #expect(copied.status != 0 && copied.stderr.contains("no-rights"), "\(copied.stderr)")
            let long = try CLIRunner.run(["play", "long", "--data-dir", data, "--exec", "true"])
            #expect(long.status == 0, "the unlimited key still plays: \(long.stderr)")
        }
        server.stop()
        try await TestMedia.offloaded { () throws -> Void in
            #expect(try CLIRunner.run(["play", "short", "--data-dir", data, "--exec", "true"]).status != 0, "offline, the expired key refuses too")
            #expect(try CLIRunner.run(["play", "long", "--data-dir", data, "--exec", "true"]).status == 0, "offline, the persistable key plays")
        }
    }
}
