import Foundation
import NIOCore
import SatchelBytes
import SatchelHTTP
import SatchelMedia
import SatchelProtection
import SatchelStreams

/// A resource of a DASH or Smooth source transcribed to HLS: the top-level playlist, a media playlist (made again
/// from a reloaded manifest when it is dynamic or live), or a segment: one video DASH segment or Smooth fragment and
/// the audio ones starting in it, decrypted and remuxed to MPEG-2 TS.
struct TranscriptSource: SegmentSource {
    /// The path asked for (a segment's names its variant: its continuity counters are that rendition's).
    let path: String
    let resource: HLSTranscript.Resource

    func answer(_ request: SourceRequest) async throws(PlaybackError) -> SegmentAnswer {
        let files = request.files
        let assembly = TranscriptAssembly(files: files)
        guard let transcript = files.session.router.transcript else { throw .notFound }
        switch resource {
        case .master:
            return Self.text(transcript.masterPlaylist())
        case let .playlist(index):
            var current = transcript
            let asset = files.asset
            if transcript.isDynamic, let reload = asset.reloadEntry, let url = asset.sourceURL {
                let text = try await files.reportingOrigin(asset.entry) { () async throws(PlaybackError) -> String in try await reload() }
                current = try files.reportingInvalid(asset.entry) { () throws(PlaybackError) -> HLSTranscript in
                    do throws(StreamError) {
                        return try HLSTranscript(manifest: text, url: url, languages: files.session.languages)
                    } catch { throw PlaybackError(error) }
                }
                current = try await assembly.indexed(current, mpd: text, url: url)
                files.session.replace(transcript: current)
            }
            guard let playlist = current.mediaPlaylist(index) else { throw .notFound }
            return Self.text(playlist)
        case let .segment(segment):
            let buffer = try await assembly.transportSegment(path, segment)
            // Its length is known only once it is made: a HEAD makes it too (and sends nothing, registers no use).
            let head = try SegmentHead(ContentTypes.type(of: path), size: Int64(buffer.readableBytes), rangeHeader: request.range)
            let served = head.served.flatMap { buffer.getSlice(at: buffer.readerIndex + Int($0.lowerBound), length: Int($0.upperBound - $0.lowerBound) + 1) }
            return SegmentAnswer(head) { MemoryBody(served.map { [$0] } ?? [], transform: .transcribed) }
        }
    }

    private static func text(_ playlist: String) -> SegmentAnswer {
        SegmentAnswer.text(playlist, "application/vnd.apple.mpegurl")
    }
}

/// An init segment of a transcribed DASH source (Smooth has none): clear (no `sinf`/`pssh`), with the decryptor of
/// its track when it was protected.
struct TranscriptInitSegment: Sendable {
    /// The init segment without its protection boxes.
    var clear: [UInt8]
    /// Decrypts the track's media segments (nil: clear content).
    var decryptor: FMP4Decryptor?

    /// Reads `bytes`; a protected track's init segment loses its protection boxes.
    init(_ bytes: [UInt8]) throws(ProtectionError) {
        decryptor = try? FMP4Decryptor(initSegment: bytes)
        clear = decryptor == nil ? bytes : try FMP4Decryptor.clearInitSegment(bytes)
    }
}

/// The pieces of a transcribed source as one session reads them: SegmentBase indexes, and each HLS segment's DASH
/// segments or Smooth fragments fetched, decrypted and remuxed to MPEG-2 TS.
struct TranscriptAssembly: Sendable {
    let files: SessionFiles

    /// At most this many SegmentBase indexes are read for one presentation.
    static let indexLimit = 64

    /// `transcript` completed with the `sidx` boxes of its SegmentBase representations (fetched once, at most
    /// ``indexLimit``): each subsegment becomes a segment.
    func indexed(_ transcript: HLSTranscript, mpd text: String, url: URL) async throws(PlaybackError) -> HLSTranscript {
        guard !transcript.missingIndexes.isEmpty else { return transcript }
        guard transcript.missingIndexes.count <= Self.indexLimit else { throw .invalidContent("more than \(Self.indexLimit) segment indexes") }
        var indexes: [HLSTranscript.Piece: SegmentIndex] = [:]
        for piece in transcript.missingIndexes {
            let bytes = try await self.bytes(of: piece)
            indexes[piece] = try files.reportingInvalid(files.asset.entry) { () throws(PlaybackError) -> SegmentIndex in
                do { return try SegmentIndex(bytes, at: piece.range?.lowerBound ?? 0) } catch { throw .invalidContent("a segment index: \(error)") }
            }
        }
        do throws(StreamError) {
            return try HLSTranscript(manifest: text, url: url, languages: files.session.languages, indexes: indexes)
        } catch { throw PlaybackError(error) }
    }

    /// One HLS segment: each track's DASH segment (with its init segment, read once per session) or Smooth
    /// fragment (read with its quality level's codec setup) fetched, decrypted with the license's key, and the
    /// samples remuxed into one clear MPEG-2 TS segment, written straight into the buffer it is sent from.
    func transportSegment(_ file: String, _ segment: HLSTranscript.Segment) async throws(PlaybackError) -> ByteBuffer {
        var parts: [(initSegment: TranscriptInitSegment?, smooth: HLSTranscript.SmoothFragment?, media: [UInt8])] = []
        for track in [segment.video].compactMap({ $0 }) + segment.audio {
            var initSegment: TranscriptInitSegment?
            if let piece = track.initialization {
                let name = piece.url.absoluteString + (piece.range.map { "#\($0.lowerBound)-\($0.upperBound)" } ?? "")
                initSegment = try await files.session.initSegments.value(for: name) { () async throws(PlaybackError) -> TranscriptInitSegment in
                    let bytes = try await self.bytes(of: piece)
                    return try files.reportingInvalid(file) { () throws(PlaybackError) -> TranscriptInitSegment in
                        do { return try TranscriptInitSegment(bytes) } catch { throw .invalidContent("an init segment of \(file): \(error)") }
                    }
                }
            }
            parts.append((initSegment, track.smooth, try await bytes(of: track.media)))
        }
        let keys = files.session.keys
        return try files.reportingInvalid(file) { () throws(PlaybackError) -> ByteBuffer in
            var tracks: [MediaTrack] = []
            for index in parts.indices {
                let (initSegment, smooth) = (parts[index].initSegment, parts[index].smooth)
                var clear: [UInt8] = []
                swap(&clear, &parts[index].media)  // held only here: decrypted where it lies
                if let decryptor = initSegment?.decryptor ?? smooth.flatMap(Self.smoothDecryptor) {
                    let key: SecretBytes
                    if let smooth, smooth.keyID == nil {
                        // The PlayReady header names no key ID this proxy reads: the license's only key.
                        guard keys.count == 1 else { throw .noKey("the Smooth manifest names no key ID and the license holds \(keys.count) keys") }
                        key = keys[0].key
                    } else {
                        key = try SessionFiles.key(keys, of: decryptor)
                    }
                    do { try RequestTiming.timed(.decryption) { () throws(ProtectionError) in try decryptor.decrypt(segment: &clear, key: key) } } catch { throw .invalidContent("\(file) does not decrypt: \(error)") }
                }
                do {
                    if let smooth {
                        let track = try smooth.quality.track(kind: smooth.kind, timescale: smooth.timescale)
                        tracks.append(try MP4Demuxer.demuxFragment(clear, track: track, startDTS: Int64(clamping: smooth.time)))
                    } else {
                        tracks += try MP4Demuxer.demux(initSegment: initSegment?.clear ?? [], media: clear)
                    }
                } catch { throw .invalidContent("\(file): \(error)") }
            }
            // Several audio segments in one HLS segment make one track.
            var merged: [MediaTrack] = []
            for track in tracks {
                if let same = merged.firstIndex(where: { $0.kind == track.kind && $0.codec == track.codec }) {
                    merged[same].samples += track.samples
                } else {
                    merged.append(track)
                }
            }
            // The rendition's counters go on from its previous segment (a seek says so).
            let rendition = String(file.split(separator: "/").dropLast().joined(separator: "/")), sequence = Int64(clamping: segment.sequence)
            var continuity = files.session.continuity.start(rendition, sequence: sequence)
            let prepared: TSRemuxer.Prepared
            do { prepared = try TSRemuxer.Prepared(merged) } catch { throw .invalidContent("\(file) cannot be carried in MPEG-2 TS: \(error)") }
            var buffer = ByteBufferAllocator().buffer(capacity: prepared.maximumSize)
            var overflowed = false
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: prepared.maximumSize) { memory in
                var out = TSBufferOutput(memory)
                prepared.write(continuity: &continuity, into: &out)
                overflowed = out.overflowed
                return out.overflowed ? 0 : out.count
            }
            guard !overflowed else { throw .invalidContent("\(file) came out longer than MPEG-2 TS can make it") }
            files.session.continuity.end(rendition, sequence: sequence, continuity)
            return buffer
        }
    }

    /// The decryptor of a protected Smooth fragment: PIFF / CENC `cenc` with 8-byte IVs (a fragment's PIFF box may
    /// say otherwise), the key the PlayReady header names (nil: clear).
    private static func smoothDecryptor(_ fragment: HLSTranscript.SmoothFragment) -> FMP4Decryptor? {
        guard fragment.isProtected, let keyID = fragment.keyID ?? (try? KeyID([UInt8](repeating: 0, count: 16))) else { return nil }
        return FMP4Decryptor(scheme: .cenc, keyID: keyID, perSampleIVSize: 8, isVideo: fragment.kind == "video")
    }

    /// The bytes of a piece of a DASH source: a file of the asset (from disk, else its origin), or an http(s) URL
    /// of an online source. Anything else (`file:`, the engine's own folder) is refused.
    func bytes(of piece: HLSTranscript.Piece) async throws(PlaybackError) -> [UInt8] {
        switch piece.url.scheme?.lowercased() {
        case HLSTranscript.assetScheme?:
            let encoded = URLComponents(url: piece.url, resolvingAgainstBaseURL: false)?.percentEncodedPath ?? ""
            guard let path = HLSAssetMap.resolve(String(encoded.drop { $0 == "/" }), from: ""),
                  !path.hasPrefix(LocalPath.metadataFolder + "/") else { throw .notFound }
            if !files.asset.isLocal(path), files.asset.origin[path] == nil {
                // Named by the MPD, neither on disk nor known to the origin table: not cached (503, the player asks again).
                files.context.events.report(.notCached(asset: files.session.assetID, path: path))
                throw .notCached(path)
            }
            guard let range = piece.range else { return try await files.whole(path) }
            guard range.upperBound - range.lowerBound < SessionFiles.maximumFile else { throw .invalidContent("a byte range of \(path) is too large") }
            if let local = try files.local(path) { return try SessionFiles.read(local, range: range) }
            if let remote = files.asset.origin[path], remote.range == nil {
                // Only the range, from the origin (a partly downloaded single-file representation).
                return try await files.reportingOrigin(path) { () async throws(PlaybackError) -> [UInt8] in
                    try await files.context.origin.fetch(OriginFile(url: remote.url, range: range), headers: files.asset.originHeaders, limit: SessionFiles.maximumFile)
                }
            }
            let bytes = try await files.whole(path)
            guard range.upperBound < Int64(bytes.count) else { throw .invalidContent("\(path) is shorter than the byte range the MPD gives") }
            return Array(bytes[Int(range.lowerBound)...Int(range.upperBound)])
        case "http"?, "https"?:
            let remote = OriginFile(url: piece.url.absoluteString, range: piece.range)
            return try await files.reportingOrigin(piece.url.lastPathComponent) { () async throws(PlaybackError) -> [UInt8] in
                try await files.context.origin.fetch(remote, headers: files.asset.originHeaders, limit: SessionFiles.maximumFile)
            }
        default:
            throw .invalidContent("the MPD points outside the files.asset and its origin")
        }
    }
}
