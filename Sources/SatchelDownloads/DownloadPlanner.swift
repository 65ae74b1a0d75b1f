import Foundation
import SatchelMedia

/// Decides what an enqueued URL is and plans its download. The only I/O is through `fetchText`,
/// which the engine backs with HTTP and tests may back with anything.
public enum DownloadPlanner {
    /// What the first response for the asset's URL said.
    public struct Probe: Sendable {
        /// The URL after redirects.
        public var url: URL
        /// The Content-Type header.
        public var contentType: String?
        /// The Content-Length header (for a single file, its size).
        public var contentLength: Int?
        /// The body, when it is text (a manifest); nil for binary media.
        public var text: String?

        /// Creates a probe result.
        public init(url: URL, contentType: String?, contentLength: Int?, text: String?) {
            self.url = url
            self.contentType = contentType
            self.contentLength = contentLength
            self.text = text
        }
    }

    /// The longest presentation accepted, in seconds (ten years: anything longer is a broken manifest).
    static let maxDuration: Double = 315_360_000

    /// True for a duration a manifest may really carry: finite, not negative, at most ``maxDuration``.
    static func isPlausibleDuration(_ seconds: Double) -> Bool {
        seconds.isFinite && seconds >= 0 && seconds <= maxDuration
    }

    /// The format of a probed URL; text that is none of the manifests is an unknown format.
    public static func format(of probe: Probe) throws(DownloadError) -> DownloadPlan.Format {
        let type = probe.contentType.map(MIMEType.essence) ?? ""
        guard let text = probe.text else { return .file }
        let head = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }.prefix(4096)
        if type.contains("mpegurl") || head.hasPrefix("#EXTM3U") { return .hls }
        if head.contains("<SmoothStreamingMedia") { return .smooth }
        if type == "application/dash+xml" || head.contains("<MPD") { return .dash }
        throw .unknownFormat(probe.url.absoluteString)
    }

    /// The plan for a probed URL.
    public static func plan(probe: Probe, options: DownloadOptions,
                            fetchText: @Sendable (URL) async throws -> String) async throws -> DownloadPlan {
        let url = probe.url
        switch try format(of: probe) {
        case .file:
            let permitted = options.permittedMimeTypes ?? MIMEType.defaultPermitted
            let type = probe.contentType ?? "application/octet-stream"
            guard MIMEType.permits(permitted, type) else { throw DownloadError.mimeNotPermitted(url: url.absoluteString, mimeType: MIMEType.essence(type)) }
            let path = try LocalPath.planned(url, root: url)
            let file = DownloadResource(url: url.absoluteString, localPath: path, kind: .file, expectedSize: probe.contentLength,
                                        permittedMimeTypes: permitted)
            return DownloadPlan(format: .file, mainPath: path, manifests: [], resources: [file], totalDuration: nil)
        case .dash:
            return try DASHDownloadPlanner.plan(mpd: probe.text ?? "", url: url, options: options)
        case .smooth:
            return try SmoothDownloadPlanner.plan(manifest: probe.text ?? "", url: url, options: options)
        case .hls:
            return try await HLSDownloadPlanner.plan(playlist: probe.text ?? "", url: url, options: options, fetchText: fetchText)
        }
    }
}

extension HLSDownloadPlanner {
    /// The whole plan for a master (or lone media) playlist at `url`, fetching the selected media playlists.
    public static func plan(playlist text: String, url: URL, options: DownloadOptions,
                            fetchText: @Sendable (URL) async throws -> String) async throws -> DownloadPlan {
        let mainPath = try LocalPath.planned(url, root: url)
        guard text.contains("#EXT-X-STREAM-INF") else {
            let (resources, playlist) = try plan(mediaPlaylist: text, url: url, root: url, options: options)
            return DownloadPlan(format: .hls, mainPath: mainPath, manifests: [.init(path: mainPath, text: playlist)], resources: resources,
                                totalDuration: nil)
        }
        let master: HLSMasterPlaylist
        do { master = try HLSMasterPlaylist(parsing: text) } catch { throw DownloadError.malformedManifest("\(url.lastPathComponent): \(error)") }
        let selection = try select(master: master, url: url, options: options)
        var manifests = [DownloadPlan.LocalManifest(path: mainPath, text: try rewriteMaster(text, selection: selection, url: url))]
        var resources: [DownloadResource] = []
        for playlistURL in selection.playlists {
            let (media, playlist) = try plan(mediaPlaylist: try await fetchText(playlistURL), url: playlistURL, root: url, options: options,
                                             limit: options.resourceLimit - resources.count)
            manifests.append(.init(path: try LocalPath.planned(playlistURL, root: url), text: playlist))
            resources += media
        }
        return DownloadPlan(format: .hls, mainPath: mainPath, manifests: manifests, resources: resources, totalDuration: nil)
    }
}
