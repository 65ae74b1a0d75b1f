import Foundation
import SatchelBytes
import SatchelDevice
import SatchelDownloads
import SatchelPlayback
import SatchelTestSupport
import Testing

/// Seed 000 §5.5 (Download & Play Offline, "currently supported for PIFF files only"): "If the content is not yet
/// entirely cached then it shall be possible to play the arbitrary length of the content that is available in the
/// cache", and what the player fetches while it plays is stored in the cache.
@Suite("Playback: a PIFF file plays from its partial download, and what it plays is kept")
struct PartialSingleFileTests {
    @Test("a protected .ismv stopped part-way plays whole through the proxy: the downloaded part from disk (no byte of it asked of the origin again), the rest from the origin and appended to the part as it plays; the download then resumes from there and completes to the origin's bytes")
    func piffWhileDownloading() async throws {
        let (folder, _, file) = try await SingleFileTests.protectedFixture("piff", label: "partial-piff", clip: "partial-piff-source", seconds: 6)
        let stored = try TestMedia.bytes(file)
        let reference = try await TestMedia.offloaded {
            try TestMedia.packetHashes(folder.appendingPathComponent("video-piff.mp4").path, extra: ["-decryption_key", SingleFileTests.key])
        }
        let origin = try await TestOrigin.start(root: folder)
        defer { origin.stop() }
        origin.setThrottle(chunk: 8192, microseconds: 20_000)  // about 400 KB/s: the download is stopped part-way

        let data = try TestMedia.temporaryDirectory("partial-piff-data")
        let manager = try await DownloadManager(configuration: .init(dataDirectory: data.path, rules: DownloadRules(headroom: 0)),
                                                environment: DownloadEnvironment(network: FixedNetwork.unmetered))
        try await manager.add(url: origin.url("video.ismv"), id: "video")
        let part = data.appendingPathComponent("assets/video/video.ismv.part").path
        func partSize() -> Int64 { ((try? FileManager.default.attributesOfItem(atPath: part)[.size]) as? NSNumber)?.int64Value ?? 0 }
        await manager.start()
        let deadline = ContinuousClock.now + .seconds(60)
        while partSize() < Int64(stored.count) / 4, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        await manager.stop()
        let downloaded = partSize()
        #expect(downloaded >= Int64(stored.count) / 4 && downloaded < Int64(stored.count), "stopped part-way: \(downloaded) of \(stored.count)")
        origin.setThrottle(chunk: 1 << 20, microseconds: 0)
        let asked = origin.log.count

        let proxy = try PlaybackProxy(library: DownloadLibrary(manager: manager), rights: try SingleFileTests.rights())
        let url = try await proxy.open(asset: "video")
        try await TestMedia.offloaded { () throws -> Void in
            let played = try TestMedia.packetHashes(url)
            #expect(played == reference, "\(played.count) packets of \(reference.count)")
        }
        await proxy.stop()
        let during = origin.log.dropFirst(asked)
        #expect(!during.isEmpty, "the rest came from the origin")
        for request in during {
            let start = request.range.flatMap { Int64($0.dropFirst("bytes=".count).split(separator: "-").first ?? "") }
            #expect((start ?? 0) >= downloaded, "a byte of the downloaded part was asked of the origin again: \(request.range ?? "the whole file")")
        }
        let kept = partSize()
        #expect(kept > downloaded, "what played was kept: \(downloaded) → \(kept)")
        let partBytes = try TestMedia.bytes(URL(fileURLWithPath: part))
        #expect(partBytes == Array(stored.prefix(partBytes.count)), "the part holds the origin's bytes")

        // The download goes on from what playing kept, and ends with the origin's file.
        let before = origin.log.count
        #expect(await manager.run().allComplete)
        let resumed = origin.log.dropFirst(before).compactMap(\.range)
        #expect(resumed.allSatisfy { $0.hasPrefix("bytes=\(kept)-") } && !resumed.isEmpty || kept == Int64(stored.count), "resumed at \(kept): \(resumed)")
        #expect(try TestMedia.bytes(data.appendingPathComponent("assets/video/video.ismv")) == stored)
        await manager.close()
    }
}
