import Foundation
import SatchelMedia

/// Plans the download of an on-demand DASH presentation: one video representation by `maxVideoBitrate`,
/// the first audio adaptation set plus requested languages (one representation each, by `maxAudioBitrate`),
/// text sets in requested languages; SegmentTemplate ($Number$/$Time$, timelines), SegmentList (byte
/// ranges become files of their own) and SegmentBase (the whole file). Pure.
package enum DASHDownloadPlanner {
    /// The plan for the MPD at `url`. The local MPD is the origin's, rewritten by `DASHRewriter`: `BaseURL`s
    /// point at the local folders, `SegmentURL`/`Initialization` at the local files (a byte range that became a
    /// file of its own loses its range attribute), the adaptation sets and representations not downloaded go
    /// whole; every other element, attribute and comment stays byte for byte.
    package static func plan(mpd text: String, url: URL, options: PlanOptions) throws(StreamError) -> DownloadPlan {
        let manifest: DASHManifest
        let document: MarkupSpans
        do {
            manifest = try DASHManifest(parsing: text)
            document = try MarkupSpans(text)
        } catch {
            throw .malformedManifest("\(url.lastPathComponent): \(error)")
        }
        guard manifest.type != "dynamic" else { throw .liveStream(url.absoluteString) }
        if let duration = manifest.duration, !DownloadPlanner.isPlausibleDuration(duration) {
            throw .malformedManifest("mediaPresentationDuration is out of range")
        }
        let mapper = LocalPath.Mapper(root: url)
        let mpdPath = try mapper.planned(url)
        let tree = Tree(document)
        let periodElements = tree.children(of: 0, named: "Period")
        guard !periodElements.isEmpty, periodElements.count == manifest.periods.count else { throw .malformedManifest("the MPD has no Period") }
        let mpdBase = try resolve(tree.baseURL(of: 0), against: url)
        var edits: [Int: DASHElementEdit] = [:]
        try setBase(tree, element: 0, base: mpdBase, parentDirectory: "", edits: &edits, mapper: mapper)
        var resources: [DownloadResource] = []
        var bitrates: [String: Int] = [:]  // each track's declared bit rate, for an estimate of the size
        // Every period is downloaded and kept; a track continues from one period into the next (its files
        // follow on in download order and in the cached duration).
        for (periodIndex, period) in periodElements.enumerated() {
            try plan(period: period, index: periodIndex, manifest: manifest, tree: tree, mpdBase: mpdBase, options: options,
                     mapper: mapper, resources: &resources, edits: &edits, bitrates: &bitrates)
        }
        let local = DASHRewriter.rewrite(document) { _, id in edits[id] ?? .keep }
        var plan = DownloadPlan(format: .dash, mainPath: mpdPath, manifests: [.init(path: mpdPath, text: local)], resources: resources,
                                totalDuration: manifest.duration)
        plan.groupBitrates = bitrates
        return plan
    }

    /// Plans one period: its chosen representations' files, and the edits of its elements.
    private static func plan(period: Int, index periodIndex: Int, manifest: DASHManifest, tree: Tree, mpdBase: URL, options: PlanOptions,
                             mapper: LocalPath.Mapper, resources: inout [DownloadResource], edits: inout [Int: DASHElementEdit],
                             bitrates: inout [String: Int]) throws(StreamError) {
        let model = manifest.periods[periodIndex]
        let periodDuration = manifest.duration(ofPeriod: periodIndex)
        if let periodDuration, !DownloadPlanner.isPlausibleDuration(periodDuration) { throw .malformedManifest("period \(periodIndex) duration is out of range") }
        let setElements = tree.children(of: period, named: "AdaptationSet")
        let periodBase = try resolve(tree.baseURL(of: period), against: mpdBase)
        try setBase(tree, element: period, base: periodBase, parentDirectory: try localDirectory(of: mpdBase, mapper: mapper), edits: &edits, mapper: mapper)
        let chosenSets = try select(model.adaptationSets, options: options)
        var keptSets: Set<Int> = [], keptReps: Set<Int> = []
        for (track, (setIndex, rep)) in chosenSets.enumerated() {
            guard setElements.indices.contains(setIndex) else { throw .malformedManifest("adaptation set \(setIndex) is missing") }
            let setElement = setElements[setIndex]
            let set = model.adaptationSets[setIndex]
            let setBase = try resolve(tree.baseURL(of: setElement), against: periodBase)
            if keptSets.insert(setElement).inserted {
                try self.setBase(tree, element: setElement, base: setBase, parentDirectory: try localDirectory(of: periodBase, mapper: mapper),
                                 edits: &edits, mapper: mapper)
            }
            // The model lists a set's representations in document order, so the element is the one at the same position.
            let repElements = tree.children(of: setElement, named: "Representation")
            let repElement = set.representations.firstIndex(of: rep).flatMap { repElements.indices.contains($0) ? repElements[$0] : nil }
            if let repElement { keptReps.insert(repElement) }
            let base = try resolve(rep.baseURL, against: setBase)
            let setDirectory = try localDirectory(of: setBase, mapper: mapper)
            let group = "\(set.kind)/\(track)"
            bitrates[group] = max(bitrates[group] ?? 0, rep.bandwidth)
            func add(_ target: URL, range: String?, kind: DownloadResource.Kind, duration: Double?) throws(StreamError) -> String {
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
            if let template = rep.segmentTemplate, template.media != nil {
                // The same expansion the playback proxy uses (`DASHRepresentation.segmentReferences`).
                let references: DASHSegmentReferences
                do { references = try rep.segmentReferences(periodDuration: periodDuration, limit: options.resourceLimit - resources.count) } catch {
                    throw .malformedManifest("representation \(rep.id.prefix(64)): \(error)")
                }
                if let initialization = references.initialization {
                    _ = try add(try resolve(initialization.uri, against: base), range: nil, kind: .initialization, duration: nil)
                }
                guard !references.media.isEmpty else { throw .malformedManifest("representation \(rep.id.prefix(64)) has no segments") }
                for segment in references.media {
                    _ = try add(try resolve(segment.uri, against: base), range: nil, kind: .segment, duration: segment.duration)
                }
                // Files keep their origin-relative paths, so the template resolves against the local base as it did online.
                if let repElement { try self.setBase(tree, element: repElement, base: base, parentDirectory: setDirectory, edits: &edits, mapper: mapper) }
            } else if let list = rep.segmentList {
                guard !list.segments.isEmpty else { throw .malformedManifest("representation \(rep.id) has an empty SegmentList") }
                let each = list.duration.map { Double($0) / Double(max(list.timescale, 1)) } ?? (periodDuration ?? 0) / Double(list.segments.count)
                guard DownloadPlanner.isPlausibleDuration(each) else { throw .malformedManifest("SegmentList duration is out of range") }
                let baseDirectory = try localDirectory(of: base, mapper: mapper)
                var initialization: String?
                // A sourceURL is fetched whole (its range, if any, stays valid in it); Initialization@range without
                // one is a range of the BaseURL's file (which the media ranges share): a file of its own.
                let initializationPiece = list.initialization == nil ? list.initializationRange : nil
                if list.initialization != nil || initializationPiece != nil {
                    initialization = try add(try resolve(list.initialization, against: base), range: initializationPiece,
                                             kind: .initialization, duration: nil)
                }
                var pieces: [(path: String, ranged: Bool)] = []
                for segment in list.segments {
                    pieces.append((try add(try resolve(segment.url, against: base), range: segment.range, kind: .segment, duration: each), segment.range != nil))
                }
                if let repElement { try self.setBase(tree, element: repElement, base: base, parentDirectory: setDirectory, edits: &edits, mapper: mapper) }
                let listElement = repElement.flatMap { tree.children(of: $0, named: "SegmentList").first } ?? tree.children(of: setElement, named: "SegmentList").first
                if let listElement {
                    for (element, piece) in zip(tree.children(of: listElement, named: "SegmentURL"), pieces) {
                        var attributes: [String: String?] = ["media": LocalPath.relative(piece.path, from: baseDirectory + "_")]
                        if piece.ranged {
                            // The piece is a file of its own: its ranges (and an index range inside it) no longer apply.
                            attributes["mediaRange"] = .some(nil)
                            attributes["indexRange"] = .some(nil)
                        }
                        edits[element] = DASHElementEdit(attributes: attributes)
                    }
                    if let initialization, let element = tree.children(of: listElement, named: "Initialization").first {
                        var attributes: [String: String?] = ["sourceURL": LocalPath.relative(initialization, from: baseDirectory + "_")]
                        if initializationPiece != nil { attributes["range"] = .some(nil) }
                        edits[element] = DASHElementEdit(attributes: attributes)
                    }
                }
            } else {
                // SegmentBase or a bare BaseURL: the representation is one file, fetched whole (its index ranges stay valid).
                let file = try add(base, range: nil, kind: .segment, duration: periodDuration)
                if let repElement, let baseElement = tree.children(of: repElement, named: "BaseURL").first {
                    edits[baseElement] = DASHElementEdit(text: LocalPath.relative(file, from: setDirectory + "_"))
                }
            }
        }
        for setElement in setElements where !keptSets.contains(setElement) { edits[setElement] = .remove }
        for setElement in keptSets {
            for repElement in tree.children(of: setElement, named: "Representation") where !keptReps.contains(repElement) { edits[repElement] = .remove }
        }
    }

    /// Points every `BaseURL` child of `element` at the local folder of `base`, relative to the parent's local folder.
    private static func setBase(_ tree: Tree, element: Int, base: URL, parentDirectory: String, edits: inout [Int: DASHElementEdit],
                                mapper: LocalPath.Mapper) throws(StreamError) {
        let elements = tree.children(of: element, named: "BaseURL")
        guard !elements.isEmpty else { return }
        let directory = try localDirectory(of: base, mapper: mapper)
        var relative = LocalPath.relative(directory + "_", from: parentDirectory + "_")
        relative.removeLast()
        for baseElement in elements { edits[baseElement] = DASHElementEdit(text: relative.isEmpty ? "./" : relative) }
    }

    /// The local folder (relative to the MPD's, with a trailing `/`, or empty for the MPD's own) holding what `base` resolves against.
    private static func localDirectory(of base: URL, mapper: LocalPath.Mapper) throws(StreamError) -> String {
        let directory = base.absoluteString.hasSuffix("/") ? base : base.deletingLastPathComponent()
        let probe = try mapper.planned(directory.appendingPathComponent("_"))
        return String(probe.dropLast())
    }

    /// The element tree of an MPD, by index into ``MarkupSpans/elements``.
    struct Tree {
        let document: MarkupSpans

        init(_ document: MarkupSpans) {
            self.document = document
        }

        func children(of id: Int, named name: String) -> [Int] {
            document.elements[id].children.filter { document.elements[$0].name == name }
        }

        /// The first `BaseURL` child's text, trimmed.
        func baseURL(of id: Int) -> String? {
            children(of: id, named: "BaseURL").first.map { document.text(of: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
        }
    }

    /// The adaptation sets and representations to download.
    /// The chosen (adaptation set index, representation) pairs.
    static func select(_ sets: [DASHAdaptationSet], options: PlanOptions) throws(StreamError) -> [(Int, DASHRepresentation)] {
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

    private static func resolve(_ reference: String?, against base: URL) throws(StreamError) -> URL {
        guard let reference, !reference.isEmpty else { return base }
        // A reference that does not parse is named without its query (it may carry a token).
        guard let resolved = URL(string: reference, relativeTo: base)?.absoluteURL else { throw .malformedManifest("bad URL \(reference.prefix { $0 != "?" }.prefix(64))") }
        return resolved
    }
}
