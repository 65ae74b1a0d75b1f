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
        if let duration = manifest.duration, !DownloadPlanner.isPlausibleDuration(duration) {
            throw .malformedManifest("mediaPresentationDuration is out of range")
        }
        let mapper = LocalPath.Mapper(root: url)
        let mpdPath = try mapper.planned(url)
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
                guard resources.count < options.resourceLimit else { throw .malformedManifest("more than \(options.resourceLimit) files") }
                var path = try mapper.planned(target)
                var byteRange: DownloadResource.ByteRange?
                if let range {
                    guard let parsed = DownloadResource.ByteRange(inclusive: range) else { throw .malformedManifest("bad byte range \(range.prefix(64))") }
                    byteRange = parsed
                    path = LocalPath.piece(path, offset: parsed.offset, length: parsed.length)
                }
                resources.append(DownloadResource(url: target.absoluteString, localPath: path, range: byteRange, kind: kind, duration: duration,
                                                  group: kind == .segment ? group : nil))
                return path
            }
            func expand(_ template: String, number: UInt64?, time: UInt64?) throws(DownloadError) -> String {
                do { return try DASHSegmentTemplate.expand(template, representationID: rep.id, bandwidth: rep.bandwidth, number: number, time: time) } catch {
                    throw .malformedManifest("representation \(rep.id.prefix(64)): \(error)")
                }
            }
            if let template = rep.segmentTemplate, let media = template.media {
                if let initialization = template.initialization {
                    let name = try expand(initialization, number: nil, time: nil)
                    _ = try add(try resolve(name, against: base), range: nil, kind: .initialization, duration: nil)
                }
                let segments: [(number: UInt64, time: UInt64, duration: UInt64)]
                do { segments = try template.segments(presentationDuration: manifest.duration, limit: options.resourceLimit - resources.count) } catch {
                    throw .malformedManifest("representation \(rep.id.prefix(64)): \(error)")
                }
                guard !segments.isEmpty else { throw .malformedManifest("representation \(rep.id) has no segments") }
                for segment in segments {
                    let name = try expand(media, number: segment.number, time: segment.time)
                    _ = try add(try resolve(name, against: base), range: nil, kind: .segment,
                                duration: Double(segment.duration) / Double(max(template.timescale, 1)))
                }
                // Files keep their origin-relative paths, so the template still resolves against the local base.
                rep.baseURL = try localDirectory(of: base, root: url, mpdPath: mpdPath)
            } else if var list = rep.segmentList {
                guard !list.segments.isEmpty else { throw .malformedManifest("representation \(rep.id) has an empty SegmentList") }
                let each = list.duration.map { Double($0) / Double(max(list.timescale, 1)) } ?? (manifest.duration ?? 0) / Double(list.segments.count)
                guard DownloadPlanner.isPlausibleDuration(each) else { throw .malformedManifest("SegmentList duration is out of range") }
                if let initialization = list.initialization {
                    list.initialization = LocalPath.relative(try add(try resolve(initialization, against: base), range: nil, kind: .initialization, duration: nil),
                                                             from: mpdPath)
                }
                list.segments = try list.segments.map { (segment) throws(DownloadError) -> (url: String?, range: String?) in
                    (LocalPath.relative(try add(try resolve(segment.url, against: base), range: segment.range, kind: .segment, duration: each), from: mpdPath), nil)
                }
                rep.segmentList = list
                rep.baseURL = nil
            } else {
                // SegmentBase or a bare BaseURL: the representation is one file, fetched whole.
                rep.baseURL = LocalPath.relative(try add(base, range: nil, kind: .segment, duration: manifest.duration), from: mpdPath)
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
    private static func localDirectory(of base: URL, root: URL, mpdPath: String) throws(DownloadError) -> String? {
        let directory = base.absoluteString.hasSuffix("/") ? base : base.deletingLastPathComponent()
        guard directory.absoluteString != root.deletingLastPathComponent().absoluteString else { return nil }
        let probe = try LocalPath.planned(directory.appendingPathComponent("_"), root: root)
        let path = probe.split(separator: "/").dropLast().joined(separator: "/")
        return path.isEmpty ? nil : LocalPath.relative(path + "/_", from: mpdPath).dropLast(1).description
    }
}
