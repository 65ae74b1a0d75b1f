import Foundation
import SatchelMedia
import SatchelProtection

/// The rules that turn a DASH presentation into ``HLSTranscript``'s variants: which adaptation sets and
/// representations, how audio segments pair with video ones, and each segment's pieces. Pure.
enum DASHTranscription {
    /// The audio segments (by their start times) grouped by the video segment each starts in, as indices: one
    /// each when aligned; those that start before the second video segment go with the first.
    static func paired(_ leadStarts: [Double], _ audioStarts: [Double]) -> [[Int]] {
        var paired = [[Int]](repeating: [], count: leadStarts.count)
        guard !leadStarts.isEmpty else { return paired }
        var target = 0
        for (index, start) in audioStarts.enumerated() {
            while target + 1 < leadStarts.count && leadStarts[target + 1] <= start + 0.001 { target += 1 }
            paired[target].append(index)
        }
        return paired
    }

    /// The video and audio adaptation sets (indices) the transcription uses.
    static func choose(_ sets: [DASHAdaptationSet], languages: [String]) -> (video: Int?, audio: Int?) {
        func carried(_ set: DASHAdaptationSet, _ prefixes: [String]) -> Bool {
            set.representations.contains { rep in
                guard let codecs = rep.codecs?.lowercased() else { return true }  // not named: try it
                return prefixes.contains { codecs.hasPrefix($0) }
            }
        }
        func best(_ candidates: [Int]) -> Int? {
            candidates.first { sets[$0].roles.contains("main") } ?? candidates.first
        }
        let video = best(sets.indices.filter { sets[$0].kind == "video" && carried(sets[$0], ["avc1", "avc3"]) })
        let audio = sets.indices.filter { sets[$0].kind == "audio" && carried(sets[$0], ["mp4a", "ac-3", "ec-3"]) }
        let language = audio.first { index in
            guard let lang = sets[index].language?.lowercased() else { return false }
            return languages.contains { lang.hasPrefix($0.lowercased()) }
        }
        return (video, language ?? best(audio))
    }

    /// A set's representations the proxy can carry, by ascending bandwidth.
    static func ranked(_ set: DASHAdaptationSet) -> [DASHRepresentation] {
        let prefixes = set.kind == "video" ? ["avc1", "avc3"] : ["mp4a", "ac-3", "ec-3"]
        return set.representations.filter { rep in rep.codecs.map { c in prefixes.contains { c.lowercased().hasPrefix($0) } } ?? true }
            .sorted { $0.bandwidth < $1.bandwidth }
    }

    /// One representation's segments in a period, resolved. A SegmentBase representation takes its subsegments
    /// from its `sidx` in `indexes`; without it, it is one segment and its index goes to `missing`.
    static func pieces(_ rep: DASHRepresentation, set: DASHAdaptationSet?, base periodBase: URL, periodDuration: Double?, period: Int,
                               indexes: [HLSTranscript.Piece: SegmentIndex], missing: inout [HLSTranscript.Piece])
        throws(StreamError) -> [(number: UInt64, time: UInt64, start: Double, duration: Double, piece: HLSTranscript.TrackPiece)] {
        var references: DASHSegmentReferences
        do { references = try rep.segmentReferences(periodDuration: periodDuration, limit: HLSTranscript.segmentLimit) } catch {
            throw .invalidContent("representation \(rep.id.prefix(64)) of period \(period): \(error)")
        }
        let setBase = try resolve(set?.baseURL, against: periodBase)
        let base = try resolve(rep.baseURL, against: setBase)
        if let indexRange = try range(references.indexRange) {
            let where_ = HLSTranscript.Piece(url: base, range: indexRange)
            if references.initialization == nil, indexRange.lowerBound > 0 {
                references.initialization = ("", "0-\(indexRange.lowerBound - 1)")  // the file's start, up to its index
            }
            if let index = indexes[where_] {
                guard index.references.count <= HLSTranscript.segmentLimit else { throw .invalidContent("more than \(HLSTranscript.segmentLimit) subsegments") }
                let scale = Double(index.timescale)
                references.media = index.references.enumerated().map { position, reference in
                    DASHMediaSegment(uri: "", range: "\(reference.range.lowerBound)-\(reference.range.upperBound)", number: UInt64(position) + 1,
                                     time: reference.time, start: Double(reference.time) / scale, duration: Double(reference.duration) / scale)
                }
            } else {
                missing.append(where_)
            }
        }
        let initialization = try references.initialization.map { (reference) throws(StreamError) in
            HLSTranscript.Piece(url: try resolve(reference.uri, against: base), range: try range(reference.range))
        }
        var out: [(number: UInt64, time: UInt64, start: Double, duration: Double, piece: HLSTranscript.TrackPiece)] = []
        for segment in references.media {
            let media = HLSTranscript.Piece(url: try resolve(segment.uri, against: base), range: try range(segment.range))
            out.append((segment.number, segment.time, segment.start, segment.duration, HLSTranscript.TrackPiece(initialization: initialization, media: media)))
        }
        return out
    }

    /// "first-last" as a closed range.
    static func range(_ text: String?) throws(StreamError) -> ClosedRange<Int64>? {
        guard let text else { return nil }
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let low = Int64(parts[0]), let high = Int64(parts[1]), low >= 0, high >= low else {
            throw .invalidContent("bad byte range \(text.prefix(40))")
        }
        return low...high
    }

    static func resolve(_ reference: String?, against base: URL) throws(StreamError) -> URL {
        guard let reference, !reference.isEmpty else { return base }
        // A reference that does not parse is named without its query (it may carry a token).
        guard let resolved = URL(string: reference, relativeTo: base)?.absoluteURL else { throw .invalidContent("bad URL \(reference.prefix { $0 != "?" }.prefix(64))") }
        return resolved
    }
}
