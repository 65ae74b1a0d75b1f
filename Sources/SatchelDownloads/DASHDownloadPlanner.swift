import Foundation
import SatchelMedia

/// Plans the download of an on-demand DASH presentation: one video representation by `maxVideoBitrate`,
/// the first audio adaptation set plus requested languages (one representation each, by `maxAudioBitrate`),
/// text sets in requested languages; SegmentTemplate ($Number$/$Time$, timelines), SegmentList (byte
/// ranges become files of their own) and SegmentBase (the whole file). Pure.
public enum DASHDownloadPlanner {
    /// The plan for the MPD at `url`.
    public static func plan(mpd text: String, url: URL, options: DownloadOptions) throws(DownloadError) -> DownloadPlan {
        let manifest: DASHManifest
        do { manifest = try DASHManifest(parsing: text) } catch { throw .malformedManifest("\(url.lastPathComponent): \(error)") }
        guard manifest.type != "dynamic" else { throw .liveStream(url.absoluteString) }
        let mpdPath = LocalPath.map(url, root: url)
        let mpdBase = manifest.baseURL.flatMap { URL(string: $0, relativeTo: url)?.absoluteURL } ?? url

        let chosenSets = try select(manifest.adaptationSets, options: options)
        var resources: [DownloadResource] = []
        var localSets: [(index: Int, set: DASHAdaptationSet)] = []
        for (setIndex, representation) in chosenSets {
            let set = manifest.adaptationSets[setIndex]
            var rep = representation
            let base = try resolve(rep.baseURL, against: mpdBase)
            let group = "\(set.kind)/\(rep.id)"
            func add(_ target: URL, range: String?, kind: DownloadResource.Kind, duration: Double?) throws(DownloadError) -> String {
                var path = LocalPath.map(target, root: url)
                var byteRange: DownloadResource.ByteRange?
                if let range {
                    let bounds = range.split(separator: "-").compactMap { Int($0) }
                    guard bounds.count == 2, bounds[1] >= bounds[0] else { throw .malformedManifest("bad byte range \(range)") }
                    byteRange = .init(offset: bounds[0], length: bounds[1] - bounds[0] + 1)
                    path = LocalPath.piece(path, offset: bounds[0], length: bounds[1] - bounds[0] + 1)
                }
                resources.append(DownloadResource(url: target.absoluteString, localPath: path, range: byteRange, kind: kind, duration: duration,
                                                  group: kind == .segment ? group : nil))
                return LocalPath.relative(path, from: mpdPath)
            }
            if let template = rep.segmentTemplate, let media = template.media {
                if let initialization = template.initialization {
                    let name = DASHSegmentTemplate.expand(initialization, representationID: rep.id, bandwidth: rep.bandwidth, number: nil, time: nil)
                    _ = try add(try resolve(name, against: base), range: nil, kind: .initialization, duration: nil)
                }
                let segments = template.segments(presentationDuration: manifest.duration)
                guard !segments.isEmpty else { throw .malformedManifest("representation \(rep.id) has no segments") }
                for segment in segments {
                    let name = DASHSegmentTemplate.expand(media, representationID: rep.id, bandwidth: rep.bandwidth, number: segment.number, time: segment.time)
                    _ = try add(try resolve(name, against: base), range: nil, kind: .segment,
                                duration: Double(segment.duration) / Double(max(template.timescale, 1)))
                }
                // Files keep their origin-relative paths, so the template still resolves against the local base.
                rep.baseURL = localDirectory(of: base, root: url, mpdPath: mpdPath)
            } else if var list = rep.segmentList {
                guard !list.segments.isEmpty else { throw .malformedManifest("representation \(rep.id) has an empty SegmentList") }
                let each = list.duration.map { Double($0) / Double(max(list.timescale, 1)) } ?? (manifest.duration ?? 0) / Double(list.segments.count)
                if let initialization = list.initialization {
                    list.initialization = try add(try resolve(initialization, against: base), range: nil, kind: .initialization, duration: nil)
                }
                list.segments = try list.segments.map { (segment) throws(DownloadError) -> (url: String?, range: String?) in
                    (try add(try resolve(segment.url, against: base), range: segment.range, kind: .segment, duration: each), nil)
                }
                rep.segmentList = list
                rep.baseURL = nil
            } else {
                // SegmentBase or a bare BaseURL: the representation is one file, fetched whole.
                rep.baseURL = try add(base, range: nil, kind: .segment, duration: manifest.duration)
            }
            if let position = localSets.firstIndex(where: { $0.index == setIndex }) {
                localSets[position].set.representations.append(rep)
            } else {
                var copy = set
                copy.representations = [rep]
                localSets.append((setIndex, copy))
            }
        }
        var local = manifest
        local.baseURL = nil
        local.adaptationSets = localSets.map(\.set)
        return DownloadPlan(format: .dash, mainPath: mpdPath, manifests: [.init(path: mpdPath, text: local.text)], resources: resources,
                            totalDuration: manifest.duration)
    }

    /// The adaptation sets and representations to download.
    /// The chosen (adaptation set index, representation) pairs.
    static func select(_ sets: [DASHAdaptationSet], options: DownloadOptions) throws(DownloadError) -> [(Int, DASHRepresentation)] {
        var chosen: [(Int, DASHRepresentation)] = []
        let video = sets.indices.filter { sets[$0].kind == "video" }.flatMap { index in sets[index].representations.map { (index, $0) } }
        if let pick = RenditionChoice.pick(video, bitrate: { $0.1.bandwidth }, max: options.maxVideoBitrate) { chosen.append(pick) }
        let audioSets = sets.indices.filter { sets[$0].kind == "audio" }
        for (order, index) in audioSets.enumerated() where order == 0 || RenditionChoice.wanted(sets[index].language, options.languages) {
            if let rep = RenditionChoice.pick(sets[index].representations, bitrate: \.bandwidth, max: options.maxAudioBitrate) { chosen.append((index, rep)) }
        }
        for index in sets.indices where sets[index].kind == "text" && RenditionChoice.wanted(sets[index].language, options.languages) {
            if let rep = sets[index].representations.first { chosen.append((index, rep)) }
        }
        guard !chosen.isEmpty else { throw .nothingSelected("the MPD has no video or audio representations") }
        return chosen
    }

    private static func resolve(_ reference: String?, against base: URL) throws(DownloadError) -> URL {
        guard let reference, !reference.isEmpty else { return base }
        guard let resolved = URL(string: reference, relativeTo: base)?.absoluteURL else { throw .malformedManifest("bad URL \(reference)") }
        return resolved
    }

    /// The local BaseURL for a representation whose files live under `base`, or nil when that is the MPD's own directory.
    private static func localDirectory(of base: URL, root: URL, mpdPath: String) -> String? {
        let directory = base.absoluteString.hasSuffix("/") ? base : base.deletingLastPathComponent()
        guard directory.absoluteString != root.deletingLastPathComponent().absoluteString else { return nil }
        let probe = LocalPath.map(directory.appendingPathComponent("_"), root: root)
        let path = probe.split(separator: "/").dropLast().joined(separator: "/")
        return path.isEmpty ? nil : LocalPath.relative(path + "/_", from: mpdPath).dropLast(1).description
    }
}
