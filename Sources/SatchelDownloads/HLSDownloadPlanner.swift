import Foundation
import SatchelMedia

/// Plans the download of an HLS asset: which variant and renditions, which files, and the
/// playlists rewritten to point at the local copies. Pure: the caller fetches the playlists.
public enum HLSDownloadPlanner {
    /// The chosen variant and renditions of a master playlist.
    public struct Selection: Sendable, Equatable {
        /// The chosen variant.
        public var variant: HLSVariant
        /// Chosen audio and subtitle renditions (with URIs).
        public var renditions: [HLSRendition]
        /// Absolute URLs of the media playlists to fetch: the variant's first, then the renditions'.
        public var playlists: [URL]
    }

    /// Chooses the variant with the highest BANDWIDTH not above `maxBitrate` (the lowest when none is;
    /// 0 = the lowest; nil = the highest) and its DEFAULT=YES renditions plus those in the requested languages.
    public static func select(master: HLSMasterPlaylist, url: URL, options: DownloadOptions) throws(DownloadError) -> Selection {
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

    /// The master playlist keeping only the selection, pointing at the local media playlists.
    public static func rewriteMaster(_ master: HLSMasterPlaylist, selection: Selection, url: URL) throws(DownloadError) -> String {
        func local(_ uri: String) throws(DownloadError) -> String {
            guard let resolved = URL(string: uri, relativeTo: url)?.absoluteURL else { return uri }
            return try LocalPath.planned(resolved, root: url)
        }
        var variant = selection.variant
        variant.uri = try local(variant.uri)
        let renditions = try selection.renditions.map { (rendition) throws(DownloadError) -> HLSRendition in
            var copy = rendition
            if let uri = rendition.uri { copy.uri = try local(uri) }
            return copy
        }
        if !renditions.contains(where: { $0.type == "SUBTITLES" }) { variant.subtitlesGroup = nil }
        return HLSMasterPlaylist(version: master.version, independentSegments: master.independentSegments, sessionKeys: master.sessionKeys,
                                 renditions: renditions, variants: [variant]).text
    }

    /// The files of one media playlist and the playlist rewritten for local playback.
    /// Byte-ranged pieces become files of their own, so the local playlist needs no byte ranges.
    /// `limit` caps the files (the asset's ``DownloadOptions/resourceLimit`` less what other playlists planned).
    public static func plan(mediaPlaylist text: String, url: URL, root: URL, options: DownloadOptions,
                            limit: Int? = nil) throws(DownloadError) -> (resources: [DownloadResource], playlist: String) {
        let playlist: HLSMediaPlaylist
        do { playlist = try HLSMediaPlaylist(parsing: text) } catch { throw .malformedManifest("\(url.lastPathComponent): \(error)") }
        guard playlist.endList, playlist.playlistType != "EVENT" else { throw .liveStream(url.absoluteString) }
        let mapper = LocalPath.Mapper(root: root)
        let playlistPath = try mapper.planned(url)
        var resources: [DownloadResource] = [], seen: Set<String> = []
        var rewritten = playlist
        var nextOffset: [String: Int] = [:]

        func resolve(_ uri: String) throws(DownloadError) -> URL {
            guard let resolved = URL(string: uri, relativeTo: url)?.absoluteURL else { throw .malformedManifest("bad URI \(uri)") }
            return resolved
        }
        let limit = limit ?? options.resourceLimit
        func add(_ resolved: URL, _ range: HLSByteRange?, kind: DownloadResource.Kind, duration: Double?) throws(DownloadError) -> String {
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

        for index in playlist.segments.indices {
            var segment = playlist.segments[index]
            guard DownloadPlanner.isPlausibleDuration(segment.duration) else {
                throw .malformedManifest("\(url.lastPathComponent): EXTINF duration is out of range")
            }
            if let map = segment.map {
                segment.map = HLSMap(uri: try add(try resolve(map.uri), map.byteRange, kind: .initialization, duration: nil))
            }
            segment.keys = try segment.keys.map { (key) throws(DownloadError) -> HLSKey in
                var copy = key
                guard let uri = key.uri, !uri.hasPrefix("skd://"), !uri.hasPrefix("data:"), key.method != "NONE" else { return copy }
                let resolved = try resolve(uri)
                if key.method == "AES-128" && options.includeEncryptionKeys {
                    copy.uri = try add(resolved, nil, kind: .key, duration: nil)
                } else {
                    copy.uri = resolved.absoluteString  // left to the license layer, reachable from the local copy
                }
                return copy
            }
            segment.uri = try add(try resolve(segment.uri), segment.byteRange, kind: .segment, duration: segment.duration)
            segment.byteRange = nil
            rewritten.segments[index] = segment
        }
        return (resources, rewritten.text)
    }
}
