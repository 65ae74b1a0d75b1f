import Foundation
import SatchelMedia

/// Decides what a URL is and plans it. Pure: a planner is given the documents it needs and answers either the plan
/// or the documents to fetch next (``Step``); the caller fetches (the download engine with HTTP, tests with anything).
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

    /// One step of planning.
    public enum Step: Sendable, Equatable {
        /// The plan.
        case plan(DownloadPlan)
        /// These documents (absolute URLs) are needed first: fetch them and call again with them.
        case fetch([URL])
    }

    /// The most rounds of fetching a plan takes (an HLS master playlist needs one, for its media playlists).
    public static let maximumRounds = 4

    /// The longest presentation accepted, in seconds (ten years: anything longer is a broken manifest).
    static let maxDuration: Double = 315_360_000

    /// True for a duration a manifest may really carry: finite, not negative, at most ``maxDuration``.
    static func isPlausibleDuration(_ seconds: Double) -> Bool {
        seconds.isFinite && seconds >= 0 && seconds <= maxDuration
    }

    /// The format of a probed URL; text that is none of the manifests is an unknown format.
    public static func format(of probe: Probe) throws(StreamError) -> DownloadPlan.Format {
        let type = probe.contentType.map(MIMEType.essence) ?? ""
        guard let text = probe.text else { return .file }
        let head = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }.prefix(4096)
        if type.contains("mpegurl") || head.hasPrefix("#EXTM3U") { return .hls }
        if head.contains("<SmoothStreamingMedia") { return .smooth }
        if type == "application/dash+xml" || head.contains("<MPD") { return .dash }
        throw .unknownFormat(probe.url.absoluteString)
    }

    /// The plan for a probed URL given the documents fetched so far (by absolute URL), or the ones it needs next.
    public static func step(probe: Probe, options: PlanOptions, documents: [URL: String]) throws(StreamError) -> Step {
        let url = probe.url
        switch try format(of: probe) {
        case .file:
            return .plan(try singleFile(probe, options: options))
        case .dash:
            return .plan(try DASHDownloadPlanner.plan(mpd: probe.text ?? "", url: url, options: options))
        case .smooth:
            return .plan(try SmoothDownloadPlanner.plan(manifest: probe.text ?? "", url: url, options: options))
        case .hls:
            return try HLSDownloadPlanner.step(playlist: probe.text ?? "", url: url, options: options, documents: documents)
        }
    }

    /// A single file's plan: the file itself, when its MIME type is permitted.
    static func singleFile(_ probe: Probe, options: PlanOptions) throws(StreamError) -> DownloadPlan {
        let url = probe.url
        let permitted = options.permittedMimeTypes ?? MIMEType.defaultPermitted
        let type = probe.contentType ?? "application/octet-stream"
        guard MIMEType.permits(permitted, type) else { throw .mimeNotPermitted(url: url.absoluteString, mimeType: MIMEType.essence(type)) }
        let path = try LocalPath.planned(url, root: url)
        let file = DownloadResource(url: url.absoluteString, localPath: path, kind: .file, expectedSize: probe.contentLength,
                                    permittedMimeTypes: permitted)
        return DownloadPlan(format: .file, mainPath: path, manifests: [], resources: [file], totalDuration: nil)
    }
}

extension HLSDownloadPlanner {
    /// The plan for a master (or lone media) playlist at `url` once `documents` holds the selected media playlists;
    /// until then, the ones to fetch.
    package static func step(playlist text: String, url: URL, options: PlanOptions, documents: [URL: String]) throws(StreamError) -> DownloadPlanner.Step {
        let mainPath = try LocalPath.planned(url, root: url)
        guard text.contains("#EXT-X-STREAM-INF") else {
            let (resources, playlist) = try plan(mediaPlaylist: text, url: url, root: url, options: options)
            return .plan(DownloadPlan(format: .hls, mainPath: mainPath, manifests: [.init(path: mainPath, text: playlist)], resources: resources,
                                      totalDuration: nil))
        }
        let master: HLSMasterPlaylist
        do { master = try HLSMasterPlaylist(parsing: text) } catch { throw .malformedManifest("\(url.lastPathComponent): \(error)") }
        let selection = try select(master: master, url: url, options: options)
        let missing = selection.playlists.filter { documents[$0] == nil }
        guard missing.isEmpty else { return .fetch(missing) }
        var manifests = [DownloadPlan.LocalManifest(path: mainPath, text: try rewriteMaster(text, selection: selection, url: url))]
        var resources: [DownloadResource] = []
        var variantGroup: String?  // the segments of the variant's own playlist (the first selected)
        for playlistURL in selection.playlists {
            let (media, playlist) = try plan(mediaPlaylist: documents[playlistURL] ?? "", url: playlistURL, root: url, options: options,
                                             limit: options.resourceLimit - resources.count)
            manifests.append(.init(path: try LocalPath.planned(playlistURL, root: url), text: playlist))
            if playlistURL == selection.playlists.first { variantGroup = media.first { $0.kind == .segment }?.group }
            resources += media
        }
        var plan = DownloadPlan(format: .hls, mainPath: mainPath, manifests: manifests, resources: resources, totalDuration: nil)
        // The variant's BANDWIDTH is its peak rate, audio included: the estimate of its size errs large, as a rule about room should.
        if let group = variantGroup { plan.groupBitrates = [group: selection.variant.bandwidth] }
        return .plan(plan)
    }
}
