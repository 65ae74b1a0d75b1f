import Foundation

/// Everything needed to download one asset: the files to fetch, the rewritten manifests to write,
/// and where the player's entry point is. Stored in the index as JSON when the asset is enqueued.
public struct DownloadPlan: Sendable, Codable, Equatable {
    /// The kind of asset.
    public enum Format: String, Sendable, Codable {
        case hls, dash, smooth, file
    }

    /// A manifest rewritten to point at the local files.
    public struct LocalManifest: Sendable, Codable, Equatable {
        /// Path inside the asset's directory.
        public var path: String
        /// The manifest text.
        public var text: String

        /// Creates a manifest.
        public init(path: String, text: String) {
            self.path = path
            self.text = text
        }
    }

    /// The asset's format.
    public var format: Format
    /// The local path of the entry point: the master playlist, MPD, Smooth manifest or the single file.
    public var mainPath: String
    /// Manifests, written before any media.
    public var manifests: [LocalManifest]
    /// Files to fetch, in download order (init segments and keys first, then media by start time).
    public var resources: [DownloadResource]
    /// The presentation's duration in seconds, when the manifest says.
    public var totalDuration: Double?
    /// Each track's bit rate (bits per second) as its manifest declares it — a variant's BANDWIDTH, a representation's
    /// bandwidth, a quality level's bit rate —, by the `group` its segments name: what a size is estimated from.
    public var groupBitrates: [String: Int]?

    /// Creates a plan, ordering media so the cached part grows contiguously from the start of every track.
    public init(format: Format, mainPath: String, manifests: [LocalManifest], resources: [DownloadResource], totalDuration: Double?) {
        self.format = format
        self.mainPath = mainPath
        self.manifests = manifests
        self.totalDuration = totalDuration
        var seen = Set<String>()
        let unique = resources.filter { seen.insert($0.localPath).inserted }
        // Non-segments first; segments interleaved across tracks by start time (stable within a track).
        var starts: [String: Double] = [:]
        var keyed: [(start: Double, order: Int, resource: DownloadResource)] = []
        for (order, resource) in unique.enumerated() {
            guard resource.kind == .segment else { keyed.append((-1, order, resource)); continue }
            let group = resource.group ?? ""
            let start = starts[group, default: 0]
            starts[group] = start + (resource.duration ?? 0)
            keyed.append((start, order, resource))
        }
        self.resources = keyed.sorted { ($0.start, $0.order) < ($1.start, $1.order) }.map(\.resource)
    }

    /// What an asset row holds in place of its plan (the plan lives in the asset's folder).
    package var placeholder: DownloadPlan {
        DownloadPlan(format: format, mainPath: "", manifests: [], resources: [], totalDuration: nil)
    }

    /// True for ``placeholder``.
    package var isPlaceholder: Bool { mainPath.isEmpty && resources.isEmpty && manifests.isEmpty }

    /// Bytes the plan will fetch, estimated: each file's size when it is known (a byte range, an announced length),
    /// else a segment's duration at its track's declared bit rate. Nil when nothing is known; an HLS variant's
    /// BANDWIDTH covers its audio renditions too, whose segments then count nothing of their own.
    public var estimatedBytes: Int? {
        var total = 0.0, known = false
        for resource in resources {
            if let size = resource.expectedSize {
                total += Double(size)
                known = true
            } else if let duration = resource.duration, let group = resource.group, let bitrate = groupBitrates?[group], bitrate > 0 {
                total += duration * Double(bitrate) / 8
                known = true
            }
        }
        return known && total < Double(Int.max / 2) ? Int(total.rounded(.up)) : nil
    }

    /// Bytes the plan will fetch, when every file's size is known in advance.
    public var expectedBytes: Int? {
        var total = 0
        for resource in resources {
            guard let size = resource.expectedSize else { return nil }
            total += size
        }
        return total
    }

    /// The media duration available contiguously from the start, given which resources are complete:
    /// per track, the sum of segment durations up to the first missing one; the smallest track wins.
    public func cachedDuration(isComplete: (Int) -> Bool) -> Double {
        var tracks: [String: (duration: Double, open: Bool)] = [:]
        for (index, resource) in resources.enumerated() where resource.kind == .segment {
            let group = resource.group ?? ""
            var track = tracks[group] ?? (0, true)
            if track.open {
                if isComplete(index) { track.duration += resource.duration ?? 0 } else { track.open = false }
            }
            tracks[group] = track
        }
        if tracks.isEmpty {  // a single file: all or nothing
            return resources.indices.allSatisfy(isComplete) ? (totalDuration ?? 0) : 0
        }
        // Every track whole: the whole presentation (tracks may differ by a frame or two).
        if tracks.values.allSatisfy(\.open) { return mediaDuration }
        return tracks.values.map(\.duration).min() ?? 0
    }

    /// The total media duration: the manifest's, else the longest track's segment sum.
    public var mediaDuration: Double {
        if let totalDuration { return totalDuration }
        var tracks: [String: Double] = [:]
        for resource in resources where resource.kind == .segment { tracks[resource.group ?? "", default: 0] += resource.duration ?? 0 }
        return tracks.values.max() ?? 0
    }
}
