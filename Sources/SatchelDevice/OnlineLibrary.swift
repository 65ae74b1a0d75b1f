import Foundation
import SatchelStreams
import SatchelDownloads
import SatchelPlayback

/// An online source as a `PlaybackLibrary` (`satchel play URL`): an HLS URL is planned as a download would be
/// (the variant and renditions chosen by `options`, every playlist rewritten to paths in the asset); a DASH or
/// Smooth URL keeps the origin's own manifest (the proxy transcribes it); nothing is stored, and every file comes
/// from the origin as the player asks for it.
public struct OnlineLibrary: PlaybackLibrary {
    let url: URL
    let options: DownloadOptions
    let fetcher: ResourceFetcher

    /// A library over the source at `url`; manifests are fetched with `fetcher`, with `options.headers`.
    public init(url: URL, options: DownloadOptions = DownloadOptions(), fetcher: ResourceFetcher) {
        self.url = url
        self.options = options
        self.fetcher = fetcher
    }

    /// Plans the source (whatever `assetID` names it: its rights are the agent's business).
    public func openForPlayback(_ assetID: String) async throws(PlaybackError) -> PlayableAsset {
        let (headers, origins) = (options.headers ?? [:], options.origins ?? .any)
        let plan: DownloadPlan
        do {
            let probe = try await fetcher.probe(url, headers: headers, origins: origins)
            let fetcher = fetcher
            let format = try DownloadPlanner.format(of: probe)
            if format == .dash || format == .smooth, let text = probe.text {
                // DASH and Smooth are transcribed to HLS from the origin's own manifest (every video representation or
                // quality level a variant); a dynamic one is fetched again whenever the player reloads a media playlist.
                let source = probe.url
                let reload: @Sendable () async throws(PlaybackError) -> String = { () async throws(PlaybackError) -> String in
                    do { return try await fetcher.text(source, headers: headers, origins: origins) } catch let failure as DownloadFailure {
                        throw Self.playbackError(failure)
                    } catch { throw .originUnreachable("the MPD cannot be reloaded") }
                }
                let entry = source.lastPathComponent.isEmpty ? (format == .dash ? "manifest.mpd" : "Manifest") : source.lastPathComponent
                return PlayableAsset(folder: nil, entry: entry, manifests: [entry: text], originHeaders: headers, sourceURL: source, reloadEntry: reload)
            }
            plan = try await DownloadPlanner.plan(probe: probe, options: options.planOptions) { url in try await fetcher.text(url, headers: headers, origins: origins) }
        } catch let failure as DownloadFailure {
            throw Self.playbackError(failure)
        } catch let error as StreamError {
            throw PlaybackError(error)
        } catch let error as DownloadError {
            if case let .fetch(failure) = error { throw Self.playbackError(failure) }
            throw .invalidContent("the source cannot be played: \(error.code)")
        } catch {
            throw .invalidContent("the source cannot be played")
        }
        var playable = PlayableAsset(folder: nil, entry: plan.mainPath, manifests: Dictionary(plan.manifests.map { ($0.path, $0.text) }) { first, _ in first },
                                     origin: DownloadLibrary.origin(of: plan), originHeaders: headers)
        // A media file plays as one byte stream (its ranges asked of the origin; made clear when it is protected).
        playable.isSingleFile = plan.format == .file
        return playable
    }

    /// A failure of the source's manifests in the proxy's terms (no URL: it may carry a token).
    static func playbackError(_ failure: DownloadFailure) -> PlaybackError {
        switch failure {
        case let .httpStatus(_, status): return .originStatus(status)
        case .network: return .originUnreachable("the source cannot be reached")
        default: return .invalidContent("the source's manifest cannot be used (\(failure.code))")
        }
    }
}
