import Foundation
import SatchelAgent
import SatchelBytes
@testable import SatchelDevice
@testable import SatchelDownloads
import SatchelPlayback
import SatchelRights
import SatchelStreams
import SatchelTestSupport
import Testing

/// Seed 001's persistable keys with the platform's own FairPlay client (issue 51 §1: `AVContentKeySession` on Apple
/// platforms, which keeps the key it installs and never hands it out) behind the same seam as Satchel's software
/// client: what the engine, the proxy's rights and the removal do with a key the client holds.
@Suite("A FairPlay key held by the platform's client")
struct PlatformFairPlayKeyTests {
    /// A client like the platform's: the CKC is installed and kept by the client; no content key comes out of it.
    final class HeldKeys: FairPlayKeyRequester, @unchecked Sendable {
        private let lock = NSLock()
        private var asked = 0
        private var forgot: [String] = []
        var requests: Int { lock.withLock { asked } }
        var forgotten: [String] { lock.withLock { forgot } }

        func request(assetID: String, persistable: Bool) async throws -> FairPlayRequest {
            lock.withLock { asked += 1 }
            return FairPlayRequest(spc: [1, 2, 3], context: "request:" + assetID)
        }
        func syncRequest(assetID: String, contentID: [UInt8]) async throws -> FairPlayRequest {
            throw FairPlayKeyringError(description: "the platform reports it itself")
        }
        func open(ckc: [UInt8], context: String) async throws -> FairPlayKey { FairPlayKey(key: nil, iv: [], persistent: true) }
        func forget(context: String) async { lock.withLock { forgot.append(context) } }
    }

    /// Rights of no asset but the FairPlay one.
    struct NoLicenses: PlaybackRights {
        func playbackKeys(asset: String) async throws(PlaybackError) -> [PlaybackKey] { throw .notPlayable(.noRights) }
        func playbackGrant(asset: String) async throws(PlaybackError) -> PlaybackGrant { .fixed(.noRights) }
        var changeCount: UInt64 { 0 }
    }

    @Test("seed 001 \"persistable keys … played offline\" with the platform's client: a kept key is valid and not asked for again; the proxy refuses to decrypt it with unsupported-protection saying where it plays (the platform's player, or pass-through); removed, the client lets go of its key and the keyring forgets it")
    func heldByThePlatform() async throws {
        let directory = try TestMedia.temporaryDirectory("platform-fairplay").path
        let agent = try await Agent(dataDirectory: directory)
        let keyring = FairPlayKeyring(dataDirectory: directory, sealing: try DeviceSecretBox(dataDirectory: directory))
        let client = HeldKeys()
        let factory: FairPlayClientFactory = { _, _, _ in client }
        let certificate = Data([1, 2, 3]).base64EncodedString()
        try keyring.keep(FairPlayKeyring.Record(assetID: "film", certificate: certificate, simulatorSecret: nil, hu: Hex.encode([UInt8](repeating: 7, count: 20)),
                                                ckc: Data([9, 9]).base64EncodedString(), context: "request:film", received: Date(), firstPlayback: nil, server: nil))

        let rights = FairPlayRights(inner: NoLicenses(), keyring: keyring, client: factory)
        var grant = try await rights.playbackGrant(asset: "film")
        #expect(grant.status(at: rights.readClock()).status == .valid, "the platform enforces the CKC's own limits")
        do {
            _ = try await rights.playbackKeys(asset: "film")
            Issue.record("the proxy was handed a key it cannot have")
        } catch let PlaybackError.unsupportedProtection(reason) {
            #expect(reason.contains("platform's player") && reason.contains("pass-through"), "\(reason)")
        }
        await #expect(throws: PlaybackError.self, "another asset has no rights here") { try await rights.playbackKeys(asset: "other") }

        let step = FairPlayStep(agent: agent, keyring: keyring, client: factory)
        let plan = DownloadPlan(format: .file, mainPath: "film.mp4", manifests: [], resources: [], totalDuration: nil)
        var options = DownloadOptions()
        options.license = LicenseRequest(token: "token", assetID: "film", fairPlay: FairPlayLicenseOptions(certificate: certificate))
        let asset = DownloadAsset(id: "film", url: "https://origin.example/film.mp4", state: .queued, isPaused: false, failure: nil, retryCount: 0,
                                  window: AvailabilityWindow(), options: options, plan: plan, addedAt: Date(), completedAt: nil, firstPlayAt: nil, position: 0)
        try await step.prepare(asset)
        #expect(client.requests == 0, "a kept key that plays is not asked for again")
        await step.removed(asset)
        #expect(client.forgotten == ["request:film"], "the client lets go of the removed download's key")
        #expect(try keyring.record("film") == nil)
        await agent.close()
    }
}
