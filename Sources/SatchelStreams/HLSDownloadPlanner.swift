import Foundation
import SatchelMedia

/// Plans the download of an HLS asset: which variant and renditions, which files, and the
/// playlists rewritten to point at the local copies. Pure: the caller fetches the playlists.
package enum HLSDownloadPlanner {
    /// The chosen variant and renditions of a master playlist.
    package struct Selection: Sendable, Equatable {
        /// The chosen variant.
        package var variant: HLSVariant
        /// Chosen audio and subtitle renditions (with URIs).
        package var renditions: [HLSRendition]
        /// Absolute URLs of the media playlists to fetch: the variant's first, then the renditions'.
        package var playlists: [URL]
    }

    /// Chooses the variant with the highest BANDWIDTH not above `maxBitrate` (the lowest when none is;
    /// 0 = the lowest; nil = the highest) and its DEFAULT=YES renditions plus those in the requested languages.
    package static func select(master: HLSMasterPlaylist, url: URL, options: PlanOptions) throws(StreamError) -> Selection {
        guard let variant = RenditionChoice.pick(master.variants, bitrate: \.bandwidth, max: options.maxBitrate) else {
            throw .nothingSelected("the master playlist has no variants")
        }
        var renditions: [HLSRendition] = []
        for (type, group) in [("AUDIO", variant.audioGroup), ("SUBTITLES", variant.subtitlesGroup)] {
            guard let group else { continue }
            let members = master.renditions.filter { $0.type == type && $0.groupID == group && $0.uri != nil }
            var chosen = members.filter { $0.isDefault || RenditionChoice.wanted($0.language, options.languages) }
            if chosen.isEmpty, type == "AUDIO", let first = members.first { chosen = [first] }
            renditions += chosen
        }
        var playlists: [URL] = []
        for uri in [variant.uri] + renditions.compactMap(\.uri) {
            guard let resolved = URL(string: uri, relativeTo: url)?.absoluteURL else { throw .malformedManifest("bad URI \(uri)") }
            if !playlists.contains(resolved) { playlists.append(resolved) }
        }
        return Selection(variant: variant, renditions: renditions, playlists: playlists)
    }

    /// The master playlist rewritten by `HLSRewriter`: the chosen variant and renditions point at the local media
    /// playlists, the entries not downloaded go whole (with the variant's `SUBTITLES` when no subtitle rendition is
    /// kept), I-frame playlists, session data and session keys point at the origin; every other byte stays.
    package static func rewriteMaster(_ text: String, selection: Selection, url: URL) throws(StreamError) -> String {
        let variantURL = URL(string: selection.variant.uri, relativeTo: url)?.absoluteURL
        let chosen = Set(selection.renditions.map { "\($0.type)/\($0.groupID)/\($0.name)" })
        let keepsSubtitles = selection.renditions.contains { $0.type == "SUBTITLES" }
        var variantKept = false
        let local = try HLSRewriter.rewrite(text) { (reference) throws(StreamError) -> HLSURIDecision in
            guard let resolved = URL(string: reference.uri, relativeTo: url)?.absoluteURL else {
                throw .malformedManifest("\(url.lastPathComponent): bad URI \(reference.uri.prefix(100))")
            }
            switch reference.site {
            case .variant:
                guard !variantKept, resolved == variantURL, Int(reference.attributes["BANDWIDTH"] ?? "") == selection.variant.bandwidth else {
                    return .remove
                }
                variantKept = true
                return .replace(try LocalPath.planned(resolved, root: url), removeAttributes: keepsSubtitles ? [] : ["SUBTITLES"])
            case .tag("EXT-X-MEDIA"):
                let attributes = reference.attributes
                let key = "\(attributes["TYPE"] ?? "")/\(attributes["GROUP-ID"] ?? "")/\(attributes["NAME"] ?? "")"
                guard chosen.contains(key) else { return .remove }
                return .replace(try LocalPath.planned(resolved, root: url))
            default:
                return Self.online(reference, resolved)
            }
        }
        guard variantKept else { throw .malformedManifest("\(url.lastPathComponent): the chosen variant is not in the playlist") }
        return local
    }

    /// A URI the download does not fetch, made absolute so the local copy still reaches it (license URIs stay as written).
    static func online(_ reference: HLSURIReference, _ resolved: URL) -> HLSURIDecision {
        let scheme = resolved.scheme?.lowercased() ?? ""
        return ["http", "https"].contains(scheme) ? .replace(resolved.absoluteString) : .keep
    }

    /// The files of one media playlist and the playlist rewritten for local playback by `HLSRewriter`: every URI
    /// points at the local file, byte-ranged pieces become files of their own (their `EXT-X-BYTERANGE` goes),
    /// every other line stays as the origin wrote it.
    /// `limit` caps the files (the asset's ``PlanOptions/resourceLimit`` less what other playlists planned).
    package static func plan(mediaPlaylist text: String, url: URL, root: URL, options: PlanOptions,
                            limit: Int? = nil) throws(StreamError) -> (resources: [DownloadResource], playlist: String) {
        let playlist: HLSMediaPlaylist
        do { playlist = try HLSMediaPlaylist(parsing: text) } catch { throw .malformedManifest("\(url.lastPathComponent): \(error)") }
        guard playlist.endList, playlist.playlistType != "EVENT" else { throw .liveStream(url.absoluteString) }
        for segment in playlist.segments where !DownloadPlanner.isPlausibleDuration(segment.duration) {
            throw .malformedManifest("\(url.lastPathComponent): EXTINF duration is out of range")
        }
        let mapper = LocalPath.Mapper(root: root)
        let playlistPath = try mapper.planned(url)
        var resources: [DownloadResource] = [], seen: Set<String> = []
        var nextOffset: [String: Int] = [:]
        let limit = limit ?? options.resourceLimit

        func add(_ resolved: URL, _ range: HLSByteRange?, kind: DownloadResource.Kind, duration: Double?) throws(StreamError) -> String {
            var localPath = try mapper.planned(resolved)
            var byteRange: DownloadResource.ByteRange?
            if let range {
                let offset = range.offset ?? nextOffset[resolved.absoluteString] ?? 0
                guard let checked = DownloadResource.ByteRange(checkedOffset: offset, length: range.length) else {
                    throw .malformedManifest("\(url.lastPathComponent): byte range \(range.length)@\(offset) is out of range")
                }
                nextOffset[resolved.absoluteString] = checked.offset + checked.length
                byteRange = checked
                localPath = LocalPath.piece(localPath, offset: checked.offset, length: checked.length)
            }
            guard resources.count < limit else { throw .malformedManifest("more than \(options.resourceLimit) files") }
            if seen.insert(localPath).inserted {
                resources.append(DownloadResource(url: resolved.absoluteString, localPath: localPath, range: byteRange, kind: kind,
                                                  duration: duration, group: kind == .segment ? playlistPath : nil))
            }
            return LocalPath.relative(localPath, from: playlistPath)
        }

        var segmentsSeen = 0
        let rewritten = try HLSRewriter.rewrite(text) { (reference) throws(StreamError) -> HLSURIDecision in
            guard let resolved = URL(string: reference.uri, relativeTo: url)?.absoluteURL else {
                throw .malformedManifest("\(url.lastPathComponent): bad URI \(reference.uri.prefix(100))")
            }
            switch reference.site {
            case .segment:
                guard let index = reference.segmentIndex, playlist.segments.indices.contains(index) else {
                    throw .malformedManifest("\(url.lastPathComponent): a URI line that is not a segment")
                }
                let duration = playlist.segments[index].duration
                segmentsSeen += 1
                return .replace(try add(resolved, reference.byteRange, kind: .segment, duration: duration), dropByteRange: reference.byteRange != nil)
            case .tag("EXT-X-MAP"):
                return .replace(try add(resolved, reference.byteRange, kind: .initialization, duration: nil), dropByteRange: reference.byteRange != nil)
            case .tag("EXT-X-KEY"):
                let method = reference.attributes["METHOD"] ?? "NONE"
                if method == "AES-128", options.includeEncryptionKeys, ["http", "https"].contains(resolved.scheme?.lowercased() ?? "") {
                    return .replace(try add(resolved, nil, kind: .key, duration: nil))
                }
                return Self.online(reference, resolved)  // left to the license layer, reachable from the local copy
            default:
                return Self.online(reference, resolved)
            }
        }
        guard segmentsSeen == playlist.segments.count else {
            throw .malformedManifest("\(url.lastPathComponent): \(playlist.segments.count) segments, \(segmentsSeen) segment URIs")
        }
        return (resources, rewritten)
    }
}
