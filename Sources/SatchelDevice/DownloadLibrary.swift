import SatchelSystem
import Foundation
import SatchelDownloads
import SatchelPlayback
import SatchelRights
import SatchelStreams

/// The download engine as a `PlaybackLibrary`: an asset plays inside its availability window
/// (the local server refuses expired or out-of-window assets). Files not downloaded yet are fetched from the
/// origin while the player asks for them and kept in the store (download and play).
public struct DownloadLibrary: PlaybackLibrary {
    let manager: DownloadManager
    let now: @Sendable () -> Date

    /// A library over `manager`, evaluating windows at `now`.
    public init(manager: DownloadManager, now: @escaping @Sendable () -> Date = { Date() }) {
        self.manager = manager
        self.now = now
    }

    public func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
        let asset: DownloadAsset
        do { asset = try await manager.asset(assetID) } catch { throw .unknownAsset(assetID) }
        let status = asset.state == .expired ? .expired
            : asset.window.evaluate(completedAt: asset.completedAt, firstPlayAt: asset.firstPlayAt, at: now()).status
        guard status == .valid else { throw .notPlayable(status) }
        var cache: CacheState?
        if let progress = try? await manager.progress(assetID) {
            cache = CacheState(cachedDuration: progress.cachedDuration, totalDuration: progress.totalDuration, isReadyToPlay: progress.isReadyToPlay)
        }
        var fill: (@Sendable (String, [UInt8]) async -> String?)?
        if asset.state != .complete {
            // Through the engine, which owns the store: its rules, usage and events apply.
            fill = { [manager] path, bytes in
                do throws(DownloadError) {
                    try await manager.keepFetched(assetID, path: path, bytes: bytes)
                    return nil
                } catch { return error.description }
            }
        }
        // The playlists come from the plan (written to disk only once the download starts): an asset plays as soon
        // as it is added.
        let manifests = Dictionary(asset.plan.manifests.map { ($0.path, $0.text) }) { first, _ in first }
        let folder: ConfinedFolder?
        do { folder = try manager.openFolder(assetID) } catch { throw .storage(error.description) }
        var playable = PlayableAsset(folder: folder, entry: asset.plan.mainPath, manifests: manifests, origin: Self.origin(of: asset.plan),
                                     originHeaders: asset.options.headers ?? [:], fill: fill, cache: cache)
        playable.licenseAsset = asset.options.license?.assetID
        playable.isSingleFile = asset.plan.format == .file
        if playable.isSingleFile, asset.state != .complete {
            // Seed 000 §5.5: what the player fetched continues the download (a file played while it downloads is kept).
            playable.extendPart = { [manager] path, offset, bytes, total in
                try? await manager.extendPart(assetID, path: path, offset: offset, bytes: bytes, total: total)
            }
        }
        // Expire-after-play starts with the first media a player is sent, not with a session opened or inspected.
        playable.onFirstPlay = { [manager] () async throws(PlaybackError) in
            do throws(DownloadError) { try await manager.registerPlayStart(assetID) } catch { throw .storage("cannot record the first play: \(error.description)") }
        }
        return playable
    }

    /// Every file of a plan, by its path in the asset, with where it is on the origin.
    package static func origin(of plan: DownloadPlan) -> [String: OriginFile] {
        var files: [String: OriginFile] = [:]
        for resource in plan.resources {
            let range = resource.range.flatMap { range -> ClosedRange<Int64>? in
                let (end, overflow) = Int64(range.offset).addingReportingOverflow(Int64(range.length) - 1)
                return range.length > 0 && !overflow ? Int64(range.offset)...end : nil
            }
            files[resource.localPath] = OriginFile(url: resource.url, range: range, expectedSize: resource.expectedSize.map(Int64.init))
        }
        return files
    }
}
