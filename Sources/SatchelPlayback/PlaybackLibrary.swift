import Foundation
import SatchelDownloads
import SatchelRights

/// A downloaded asset the proxy may serve: its folder and its entry point (a path in the folder).
public struct PlayableAsset: Sendable, Equatable {
    /// The asset's folder.
    public var folder: String
    /// The entry point (master playlist, MPD, manifest or file), a path in the folder.
    public var entry: String

    /// Creates a playable asset.
    public init(folder: String, entry: String) {
        self.folder = folder
        self.entry = entry
    }
}

/// Where the proxy finds downloaded assets (seam: the download engine; anything that can answer the same).
public protocol PlaybackLibrary: Sendable {
    /// The asset, if its availability window allows playback now; registers its first play (which starts
    /// seed 003's expiry after play).
    func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset
}

/// The download engine as a ``PlaybackLibrary``: an asset plays inside its availability window (seed 003:
/// the local server refuses expired or out-of-window assets).
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
        do { try await manager.registerPlayStart(assetID) } catch { throw .storage("cannot record the first play: \(error.description)") }
        return PlayableAsset(folder: manager.store.root + "/" + assetID, entry: asset.plan.mainPath)
    }
}
