import Foundation
import SatchelMedia
import SatchelProtection

/// A Smooth Streaming presentation transcribed to HLS: each video quality level a
/// variant with the chosen audio stream's best level; each HLS segment one video fragment and the audio fragments
/// that start in it, remuxed to MPEG-2 TS (fragments read with the codec setup of the manifest's
/// `CodecPrivateData`, decrypted when the manifest declares protection). A live manifest is fetched again on every
/// media playlist reload, as a dynamic MPD is.
extension HLSTranscript {
    /// True when `text` is a Smooth Streaming client manifest.
    public static func isSmooth(_ text: String) -> Bool {
        text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }.prefix(4096).contains("<SmoothStreamingMedia")
    }

    /// Transcribes `manifest`, fetched from `url`; audio in one of `languages` is preferred.
    public init(smooth manifest: SmoothManifest, url: URL, languages: [String] = []) throws(StreamError) {
        func carried(_ stream: SmoothManifest.StreamIndex) -> [SmoothManifest.QualityLevel] {
            stream.qualityLevels.filter { (try? $0.track(kind: stream.type, timescale: stream.timescale ?? manifest.timescale)) != nil }
                .sorted { $0.bitrate < $1.bitrate }
        }
        let videoStream = manifest.streams.first { $0.type.lowercased() == "video" && !carried($0).isEmpty }
        let audioStreams = manifest.streams.filter { $0.type.lowercased() == "audio" && !carried($0).isEmpty }
        let audioStream = audioStreams.first { stream in
            guard let language = stream.language?.lowercased() else { return false }
            return languages.contains { language.hasPrefix($0.lowercased()) }
        } ?? audioStreams.first
        guard videoStream != nil || audioStream != nil else {
            throw .invalidContent("the Smooth manifest has no H.264 video or AAC audio to carry in HLS")
        }
        let isProtected = manifest.protectionHeader != nil
        let keyID = manifest.protectionHeader.flatMap { PlayReadyHeader.keyIDs(base64: $0).first }
        guard (videoStream?.fragmentTimes.count ?? 0) <= Self.segmentLimit, (audioStream?.fragmentTimes.count ?? 0) <= Self.segmentLimit else {
            throw .invalidContent("more than \(Self.segmentLimit) fragments in a stream")
        }

        func fragments(_ stream: SmoothManifest.StreamIndex, _ level: SmoothManifest.QualityLevel) throws(StreamError)
            -> [(time: UInt64, start: Double, duration: Double, piece: TrackPiece)] {
            var out: [(time: UInt64, start: Double, duration: Double, piece: TrackPiece)] = []
            let ticks = stream.timescale ?? manifest.timescale, timescale = Double(max(ticks, 1))
            for (time, duration) in zip(stream.fragmentTimes, stream.fragmentDurations) {
                let media = Piece(url: try DASHTranscription.resolve(stream.fragmentURL(bitrate: level.bitrate, startTime: time), against: url), range: nil)
                let fragment = SmoothFragment(quality: level, kind: stream.type.lowercased(), timescale: ticks, time: time,
                                              isProtected: isProtected, keyID: keyID)
                out.append((time, Double(time) / timescale, Double(duration) / timescale, TrackPiece(initialization: nil, media: media, smooth: fragment)))
            }
            return out
        }

        let audioLevel = audioStream.flatMap { carried($0).last }
        let audio = try audioStream.flatMap { (stream) throws(StreamError) in try audioLevel.map { (level) throws(StreamError) in try fragments(stream, level) } }
        let videoLevels: [SmoothManifest.QualityLevel?] = videoStream.map { carried($0).map { Optional($0) } } ?? [nil]
        // A live manifest keeps a window of fragments: the sequence number follows the first one's position on
        // the timeline (its time over the first duration), so it grows as fragments drop out.
        var variants: [Variant] = []
        for level in videoLevels {
            let video = try videoStream.flatMap { (stream) throws(StreamError) in try level.map { (level) throws(StreamError) in try fragments(stream, level) } }
            let lead = video ?? audio ?? []
            let audioPieces = video != nil ? audio ?? [] : []
            let paired = DASHTranscription.paired(lead.map(\.start), audioPieces.map(\.start)).map { $0.map { audioPieces[$0].piece } }
            var sequence: UInt64 = 0
            if manifest.isLive, let first = lead.first, first.duration > 0 { sequence = UInt64(min(first.start / first.duration, 1e15).rounded()) }
            var segments: [Segment] = []
            for (position, fragment) in lead.enumerated() {
                segments.append(Segment(name: "p0-\(fragment.time).ts", sequence: sequence &+ UInt64(position), duration: fragment.duration,
                                        discontinuity: false, video: video != nil ? fragment.piece : nil,
                                        audio: video != nil ? paired[position] : [fragment.piece]))
            }
            let videoTrack = level.flatMap { try? $0.track(kind: "video", timescale: videoStream?.timescale ?? manifest.timescale) }
            let audioTrack = audioLevel.flatMap { try? $0.track(kind: "audio", timescale: audioStream?.timescale ?? manifest.timescale) }
            let codecs = [videoTrack.flatMap { try? AVCDecoderConfiguration($0.codecConfiguration).codecsString },
                          audioTrack.flatMap { try? AudioSpecificConfig($0.codecConfiguration).codecsString }].compactMap { $0 }
            let resolution = level.flatMap { l in l.maxWidth.flatMap { w in l.maxHeight.map { "\(w)x\($0)" } } }
            variants.append(Variant(bandwidth: (level?.bitrate ?? 0) + (audioLevel?.bitrate ?? 0), codecs: codecs.isEmpty ? nil : codecs.joined(separator: ","),
                                    resolution: resolution, segments: segments))
        }
        guard variants.allSatisfy({ !$0.segments.isEmpty }) else { throw .invalidContent("the Smooth manifest lists no fragments") }
        self.init(variants: variants.sorted { $0.bandwidth < $1.bandwidth }, isDynamic: manifest.isLive, isProtected: isProtected, missingIndexes: [])
    }
}
