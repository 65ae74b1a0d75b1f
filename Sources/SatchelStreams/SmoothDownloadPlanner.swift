import Foundation
import SatchelMedia

/// Plans the download of an on-demand Smooth Streaming presentation: one video quality level by
/// `maxVideoBitrate`, the first audio stream plus requested languages (by `maxAudioBitrate`), text streams
/// in requested languages; every fragment URL. Pure.
package enum SmoothDownloadPlanner {
    /// The plan for the manifest at `url`.
    package static func plan(manifest text: String, url: URL, options: PlanOptions) throws(StreamError) -> DownloadPlan {
        let manifest: SmoothManifest
        do { manifest = try SmoothManifest(parsing: text) } catch { throw .malformedManifest("\(url.lastPathComponent): \(error)") }
        guard !manifest.isLive else { throw .liveStream(url.absoluteString) }
        let mapper = LocalPath.Mapper(root: url)
        let timescale = Double(max(manifest.timescale, 1))
        guard DownloadPlanner.isPlausibleDuration(Double(manifest.duration) / timescale) else { throw .malformedManifest("Duration is out of range") }
        var streams: [SmoothManifest.StreamIndex] = []
        var resources: [DownloadResource] = []
        var audioSeen = false
        for stream in manifest.streams {
            let level: SmoothManifest.QualityLevel?
            switch stream.type.lowercased() {
            case "video":
                guard !streams.contains(where: { $0.type.lowercased() == "video" }) else { continue }
                level = RenditionChoice.pick(stream.qualityLevels, bitrate: \.bitrate, max: options.maxVideoBitrate)
            case "audio":
                guard !audioSeen || RenditionChoice.wanted(stream.language, options.languages) else { continue }
                audioSeen = true
                level = RenditionChoice.pick(stream.qualityLevels, bitrate: \.bitrate, max: options.maxAudioBitrate)
            default:
                guard RenditionChoice.wanted(stream.language, options.languages) else { continue }
                level = stream.qualityLevels.first
            }
            guard let level else { continue }
            var kept = stream
            kept.qualityLevels = [level]
            streams.append(kept)
            guard stream.fragmentTimes.count <= options.resourceLimit - resources.count else {
                throw .malformedManifest("more than \(options.resourceLimit) files")
            }
            for (time, duration) in zip(stream.fragmentTimes, stream.fragmentDurations) {
                let reference = stream.fragmentURL(bitrate: level.bitrate, startTime: time)
                guard let fragment = URL(string: reference, relativeTo: url)?.absoluteURL else { throw .malformedManifest("bad fragment URL \(reference)") }
                resources.append(DownloadResource(url: fragment.absoluteString, localPath: try mapper.planned(fragment), kind: .segment,
                                                  duration: Double(duration) / Double(max(stream.timescale ?? manifest.timescale, 1)), group: "\(stream.type)/\(stream.name ?? "")/\(level.bitrate)"))
            }
        }
        guard !resources.isEmpty else { throw .nothingSelected("the Smooth manifest has no video or audio fragments") }
        var local = manifest
        local.streams = streams
        let path = try LocalPath.planned(url, root: url)
        var plan = DownloadPlan(format: .smooth, mainPath: path, manifests: [.init(path: path, text: local.text)], resources: resources,
                                totalDuration: manifest.duration > 0 ? Double(manifest.duration) / timescale : nil)
        var bitrates: [String: Int] = [:]
        for stream in streams { for level in stream.qualityLevels { bitrates["\(stream.type)/\(stream.name ?? "")/\(level.bitrate)"] = level.bitrate } }
        plan.groupBitrates = bitrates
        return plan
    }
}
