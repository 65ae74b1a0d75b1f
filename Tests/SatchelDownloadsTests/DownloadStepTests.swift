import Foundation
import SatchelDevice
import SatchelRights
import SatchelDownloads
import SatchelBytes
import SatchelSystem
import SatchelTestSupport
import Testing

/// A `DownloadStep` (the seam for a license or permission step) runs before every attempt; its failure is handled
/// as any other: retried under the Rule of Threes when retrying can help, and nothing is fetched until it passes.
@Suite("Download engine: steps before every attempt")
struct DownloadStepTests {
    /// Refuses the first `refusals` attempts with a license failure, then lets them through.
    final class LicenseStep: DownloadStep {
        let calls = Locked(0)
        let refusals: Int
        let retryable: Bool
        init(refusals: Int, retryable: Bool = true) {
            self.refusals = refusals
            self.retryable = retryable
        }

        func prepare(_ asset: DownloadAsset) async throws(DownloadFailure) {
            let call = calls.withLock { calls -> Int in
                calls += 1
                return calls
            }
            if call <= refusals { throw .license(problem: "license-server", detail: "no license yet for \(asset.id)", retryable: retryable) }
        }
    }

    @Test("a step that fails twice delays the download (nothing fetched), then lets it complete — its processing after the files reported 0 to 1 before finished; one that always fails ends blocked")
    func steps() async throws {
        let directory = try TestMedia.temporaryDirectory("steps")
        let site = directory.appendingPathComponent("site")
        try LosslessManifestTests.write("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n#EXTINF:2,\nb.ts\n#EXT-X-ENDLIST\n", "s/index.m3u8", in: site)
        for name in ["a", "b"] { try LosslessManifestTests.media(1000, "s/\(name).ts", in: site) }
        let world = DownloadWorld(directory: directory, site: site, origin: try await TestOrigin.start(root: site))
        defer { world.origin.stop() }

        let step = LicenseStep(refusals: 2)
        let manager = try await DownloadManager(configuration: .init(dataDirectory: world.dataDirectory, rules: DownloadRules(headroom: 0),
                                                                     retryDelay: .milliseconds(10), passDelay: .milliseconds(10)),
                                                environment: DownloadEnvironment(network: FixedNetwork.unmetered), steps: [step])
        let log = await EventLog(manager)
        try await manager.add(url: world.origin.url("s/index.m3u8"), id: "s")
        #expect(await manager.run().allComplete)
        #expect(step.calls.current == 3)
        #expect(await log.events.contains(.error(assetID: "s", failure: .license(problem: "license-server", detail: "no license yet for s", retryable: true),
                                                   willRetry: true)))
        #expect(world.origin.log.filter { $0.path.hasSuffix(".ts") }.count == 2, "the segments were fetched once, after the step passed")
        // The phase after the files (the steps' work once the asset is complete) reports its progress, then finished.
        let after = await log.events.drop { $0 != .processing(assetID: "s", fraction: 0) }
        #expect(Array(after.prefix(3)) == [.processing(assetID: "s", fraction: 0), .processing(assetID: "s", fraction: 1), .finished(assetID: "s")],
                "\(Array(after.prefix(3)))")
        await manager.close()

        let never = LicenseStep(refusals: .max)
        let blocked = try await DownloadManager(configuration: .init(dataDirectory: world.directory.appendingPathComponent("data2").path,
                                                                     rules: DownloadRules(headroom: 0), retryDelay: .milliseconds(1),
                                                                     passDelay: .milliseconds(1)),
                                                environment: DownloadEnvironment(network: FixedNetwork.unmetered), steps: [never])
        try await blocked.add(url: world.origin.url("s/index.m3u8"), id: "s")
        #expect(await blocked.run().states[.blocked] == 1)
        #expect(never.calls.current == 9, "three attempts in each of three passes")
        await blocked.close()

        // The license server said no (not a failure of the server): asking again cannot help, so no retry.
        let refused = LicenseStep(refusals: .max, retryable: false)
        let final = try await DownloadManager(configuration: .init(dataDirectory: world.directory.appendingPathComponent("data3").path,
                                                                   rules: DownloadRules(headroom: 0), retryDelay: .milliseconds(1),
                                                                   passDelay: .milliseconds(1)),
                                              environment: DownloadEnvironment(network: FixedNetwork.unmetered), steps: [refused])
        try await final.add(url: world.origin.url("s/index.m3u8"), id: "s")
        #expect(await final.run().states[.blocked] == 1)
        #expect(refused.calls.current == 1, "a refusal that is not retryable blocks at once")
        await final.close()
    }
}
