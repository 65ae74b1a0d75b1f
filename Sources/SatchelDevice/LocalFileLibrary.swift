import SatchelSystem
import Foundation
import SatchelPlayback

/// One file on disk as a library of one asset, played as a byte stream: a Satchel protected file (a document) or a
/// media file. Its folder is the file's own; the file is opened without following a link.
public struct LocalFileLibrary: PlaybackLibrary {
    let path: String

    /// The library of the file at `path`.
    public init(path: String) {
        self.path = path
    }

    public func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
        let url = URL(fileURLWithPath: path).standardized
        let folder: ConfinedFolder?
        do { folder = try ConfinedFolder.openIfPresent(url.deletingLastPathComponent().path) } catch { throw .notFound }
        var asset = PlayableAsset(folder: folder, entry: url.lastPathComponent)
        asset.isSingleFile = true
        return asset
    }
}
