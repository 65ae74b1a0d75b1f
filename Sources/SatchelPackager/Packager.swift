import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection
import SatchelSystem

/// What a finished package holds.
public struct PackageSummary: Sendable {
    /// The output directory.
    public var output: String
    /// Renditions written ("video_0", "audio_0", …).
    public var renditions: [String]
    /// Segments written, all renditions together.
    public var segmentCount: Int
    /// Presentation duration in seconds.
    public var duration: Double
    /// Bytes of input media read.
    public var inputBytes: Int
    /// Bytes written.
    public var outputBytes: Int
    /// Key IDs used.
    public var keyIDs: [KeyID]
    /// The keys of a protected package, nil for a clear one: secret, never print or log them.
    public var keys: KeyFile?
    /// The key file written (``PackageOptions/keyFile``), nil when none was.
    public var keyFile: String?
}

/// Turns media files into a protected HLS (MPEG-TS or CMAF) and DASH package.
public struct Packager: Sendable {
    /// The options.
    public let options: PackageOptions
    /// Bytes of samples read at a time for a TS segment (the last sample may take it past).
    static let readStretch = 1 << 20

    /// A packager for `options`.
    public init(options: PackageOptions) {
        self.options = options
    }

    /// Builds the package. `progress` receives the fraction done, 0 to 1.
    public func run(progress: @Sendable (Double) -> Void = { _ in }) throws(PackagerError) -> PackageSummary {
        try options.validate()
        var inputs: [InputMedia] = []
        var inputBytes = 0
        for path in options.inputs {
            let input = try InputMedia(path: path)
            inputBytes += input.tracks.reduce(0) { $0 + $1.byteCount }
            inputs.append(input)
        }
        let renditions = try plan(inputs)
        let directory = try PackageDirectory(destination: options.output)
        var summary: PackageSummary
        var staged: StagedKeyFile?
        do {
            summary = try write(renditions, to: directory, inputBytes: inputBytes, progress: progress)
            // The keys are durable beside their destination before the package takes its name, so that no failure
            // leaves a package in place whose keys are nowhere.
            if let keys = summary.keys, let path = options.keyFile { staged = try StagedKeyFile(keys, destination: path) }
            try directory.commit()
        } catch {
            directory.discard()
            staged?.discard()
            throw error
        }
        if let staged {
            try staged.commit()
            summary.keyFile = staged.destination
        }
        return summary
    }

    /// Video renditions from every input's video track; audio from audio-only inputs, or else from the first input with audio.
    private func plan(_ inputs: [InputMedia]) throws(PackagerError) -> [Rendition] {
        let videos = inputs.compactMap { input in input.tracks.first { $0.kind == .video }.map { (input, $0) } }
        var audios = inputs.filter { !$0.tracks.contains { $0.kind == .video } }.compactMap { input in
            input.tracks.first { $0.kind == .audio }.map { (input, $0) }
        }
        if audios.isEmpty, let first = inputs.lazy.compactMap({ input in input.tracks.first { $0.kind == .audio }.map { (input, $0) } }).first {
            audios = [first]
        }
        guard !videos.isEmpty || !audios.isEmpty else {
            throw .input(file: inputs.first?.path ?? "", reason: "no video or audio track")
        }
        var renditions: [Rendition] = []
        for (index, (input, video)) in videos.enumerated() {
            renditions.append(Rendition(name: "video_\(index)", input: input, track: video,
                                        segments: SegmentPlanner.videoSegments(video, target: options.segmentDuration)))
        }
        let boundaries = renditions.first?.segmentStartTimes
        for (index, (input, audio)) in audios.enumerated() {
            renditions.append(Rendition(name: "audio_\(index)", input: input, track: audio,
                                        segments: SegmentPlanner.audioSegments(audio, boundaries: boundaries, target: options.segmentDuration)))
        }
        return renditions
    }

    /// The keys: one for the asset, or one per rotation period.
    private func keys(segmentCount: Int) -> [(ContentKey, Int)] {
        guard options.scheme != .clear else { return [] }
        let first = options.key ?? ContentKey.random()
        guard let rotation = options.keyRotationSegments else { return [(first, 0)] }
        return stride(from: 0, to: max(segmentCount, 1), by: rotation).map { start in (start == 0 ? first : ContentKey.random(), start) }
    }

    /// The EXT-X-KEY tags for `key` under this scheme, one per DRM system.
    private func keyTags(_ key: ContentKey) throws(PackagerError) -> [HLSKey] {
        try DRMSignalling(options: options).keyTags(key)
    }

    typealias Written = WrittenRendition

    private func write(_ renditions: [Rendition], to directory: PackageDirectory, inputBytes: Int,
                       progress: @Sendable (Double) -> Void) throws(PackagerError) -> PackageSummary {
        let maxSegments = renditions.map(\.segments.count).max() ?? 0
        let keys = keys(segmentCount: maxSegments)
        let totalSamples = max(renditions.reduce(0) { $0 + $1.track.samples.count }, 1)
        var doneSamples = 0
        var outputBytes = 0
        var written: [String: Written] = [:]
        // Two buffers in flight: one written while the next is made; AES-128 holds a batch being filled and one being
        // encrypted and written.
        let buffers = BufferPool(count: options.scheme == .aes128 ? 2 * EncryptionBatch.width + 2 : 2)
        // The package's decode-time zero: the earliest first decode time of all its tracks (in seconds, as a track's
        // ticks), so every track starts at or after zero and keeps its place relative to the others.
        var earliest: (dts: Int64, timescale: UInt32)?
        for rendition in renditions {
            guard let first = rendition.track.samples.first?.dts else { continue }
            let seconds = Double(first) / Double(max(rendition.track.timescale, 1))
            if earliest.map({ seconds < Double($0.dts) / Double(max($0.timescale, 1)) }) ?? true { earliest = (first, rendition.track.timescale) }
        }
        let smooth = options.format == .smooth ? try SmoothOutput(options: options, renditions: renditions) : nil
        let smoothOrigins = smooth == nil ? [:] : SmoothOutput.origins(renditions)
        var smoothTimes: [String: [(start: UInt64, duration: UInt64)]] = [:]
        for rendition in renditions {
            var segments: [HLSSegment] = []
            var peak = 0
            var bytesTotal = 0
            let extension_ = options.format == .hlsTS ? "ts" : "m4s"
            var tsWriter: TSSegmentWriter?
            var sampleBytes: [UInt8] = []  // a stretch of a TS segment's sample bytes, reused for every stretch
            var cmafWriter: CMAFSegmentWriter?
            let clearSegments = rendition.segmentStartTimes.prefix { $0 < options.clearLead }.count  // a clear lead's
            let origin = smoothOrigins[rendition.name] ?? earliest.map { EditList.converted($0.dts, from: $0.timescale, to: rendition.track.timescale) } ?? 0
            switch options.format {
            case .hlsTS:
                var first: [UInt8] = []
                if rendition.track.codec == .ac3, let sample = rendition.track.samples.first {
                    first = Array(try rendition.input.samples([sample][...], into: &sampleBytes).first?.data ?? [])
                }
                tsWriter = try TSSegmentWriter(track: rendition.track, sampleAES: options.scheme == .sampleAES, firstSample: first)
            case .cmaf, .smooth:
                let scheme: CommonEncryption.Scheme? = options.scheme == .cbcs ? .cbcs : options.scheme == .cenc ? .cenc : nil
                let psshBoxes = try keys.first.map { (key) throws(PackagerError) in try DRMSignalling(options: options).psshBoxes(key.0) } ?? []
                let writer = try CMAFSegmentWriter(track: rendition.track, origin: origin, scheme: scheme, key: keys.first?.0, psshBoxes: psshBoxes,
                                                   clearLead: clearSegments > 0)
                let estimate = UInt32(clamping: Int(Double(rendition.track.byteCount * 8) / max(rendition.track.durationSeconds, 0.001)))
                if smooth == nil {  // Smooth has no init segment: its manifest carries the decoder configuration
                    let initBytes = writer.initSegment(averageBitrate: estimate)
                    try directory.write(initBytes, to: "\(rendition.name)/init.mp4")
                    outputBytes += initBytes.count
                }
                cmafWriter = writer
            }
            var currentKey: ContentKey?
            var batch = EncryptionBatch()
            for (index, range) in rendition.segments.enumerated() {
                // Each segment's bytes are written on another thread while the next segment is made (AES-128's encrypted
                // first, a batch at a time).
                var payload = buffers.take()
                var header: [UInt8] = []
                var size = 0
                let key = index < clearSegments ? nil : keys.last { $0.1 <= index }?.0
                if var writer = tsWriter {
                    let sampleAES = options.scheme == .sampleAES ? try key.map { (k) throws(PackagerError) in
                        do { return try SampleAES(key: k.key, iv: k.iv) } catch { throw .invalidOptions("\(error)") }
                    } : nil
                    let all = rendition.track.samples[range]
                    writer.begin(sampleBytes: all.reduce(0) { $0 + $1.byteCount }, clear: key == nil, into: &payload)
                    // The samples are read a megabyte or so at a time, not a whole segment at once: the TS packets
                    // copy them anyway, and memory stays that of the segment being built.
                    var start = all.startIndex
                    while start < all.endIndex {
                        var end = start, bytes = 0
                        repeat {
                            bytes += all[end].byteCount
                            end += 1
                        } while end < all.endIndex && bytes < Self.readStretch
                        let samples = try rendition.input.samples(all[start..<end], into: &sampleBytes)
                        try writer.append(samples, sampleAES: sampleAES, into: &payload)
                        start = end
                    }
                    tsWriter = writer
                    size = payload.count
                } else if var writer = cmafWriter {
                    size = try writer.segment(rendition.track.samples[range], from: rendition.input, header: &header, payload: &payload, clear: key == nil)
                    cmafWriter = writer
                }
                let number = options.format == .hlsTS ? index : index + 1
                let uri = "segment_\(number).\(extension_)"
                var path = "\(rendition.name)/\(uri)"
                if let smooth {
                    let start = UInt64(max(rendition.track.samples[range.lowerBound].dts - origin, 0))
                    smoothTimes[rendition.name, default: []].append((start, UInt64(rendition.track.samples[range].reduce(0) { $0 + Int($1.duration) })))
                    path = smooth.fragmentPath(rendition, time: start)
                    header = try smooth.fragmentHeader(header)
                }
                if options.scheme == .aes128, let key {
                    size = SegmentCipher.encryptedLength(size)
                    try batch.add(consume payload, key: key, path: path, to: directory, returningTo: buffers)
                } else {
                    try directory.write(header, handing: consume payload, count: size, to: path, returningTo: buffers)
                }
                size += header.count
                outputBytes += size
                bytesTotal += size
                let duration = rendition.duration(of: range)
                peak = max(peak, Int(Double(size * 8) / max(duration, 0.001)))
                var segment = HLSSegment(duration: duration, uri: uri)
                if let key, key.keyID != currentKey?.keyID {
                    segment.keys = try keyTags(key)
                    // SAMPLE-AES changes the streams' types where a clear lead ends: a discontinuity, as Shaka Packager writes.
                    segment.discontinuity = index == clearSegments && index > 0 && options.scheme == .sampleAES
                    currentKey = key
                }
                if index == 0, options.format == .cmaf { segment.map = HLSMap(uri: "init.mp4") }
                segments.append(segment)
                doneSamples += range.count
                progress(Double(doneSamples) / Double(totalSamples))
            }
            try batch.flush(to: directory, returningTo: buffers)
            guard smooth == nil else { continue }  // no playlists: the Smooth manifests follow
            let total = rendition.track.durationSeconds
            let target = Int((segments.map(\.duration).max() ?? options.segmentDuration).rounded(.up))
            let playlist = HLSMediaPlaylist(version: options.format == .cmaf ? 7 : 5, targetDuration: max(target, 1), segments: segments)
            try directory.write(playlist.text, to: "\(rendition.name)/index.m3u8")
            written[rendition.name] = Written(playlist: playlist, peakBitrate: peak,
                                              averageBitrate: Int(Double(bytesTotal * 8) / max(total, 0.001)),
                                              codecs: codecsString(rendition.track))
        }
        if let smooth {
            try smooth.writeManifests(renditions, times: smoothTimes, key: keys.first?.0, to: directory)
        } else {
            try writeMaster(renditions, written, to: directory, keys: keys)
        }
        if options.format == .cmaf { try PackageMPD(options: options).write(renditions, written, to: directory, key: keys.first?.0) }
        return PackageSummary(output: directory.destination.path, renditions: renditions.map(\.name),
                              segmentCount: renditions.reduce(0) { $0 + $1.segments.count },
                              duration: renditions.map(\.track.durationSeconds).max() ?? 0,
                              inputBytes: inputBytes, outputBytes: outputBytes, keyIDs: keys.map(\.0.keyID),
                              keys: keys.isEmpty ? nil : KeyFile(scheme: options.scheme.rawValue, fairPlayURI: options.fairPlayURI, keys: keys))
    }

    private func codecsString(_ track: MediaTrack) -> String {
        switch track.codec {
        case .h264: return (try? AVCDecoderConfiguration(track.codecConfiguration).codecsString) ?? "avc1"
        case .hevc: return "hvc1"
        case .aac: return (try? AudioSpecificConfig(track.codecConfiguration).codecsString) ?? "mp4a.40.2"
        case .ac3: return "ac-3"
        case .eac3: return "ec-3"
        }
    }

    private func writeMaster(_ renditions: [Rendition], _ written: [String: Written], to directory: PackageDirectory,
                             keys: [(ContentKey, Int)]) throws(PackagerError) {
        let videos = renditions.filter { $0.track.kind == .video }
        let audios = renditions.filter { $0.track.kind == .audio }
        let audioGroup = audios.isEmpty || videos.isEmpty ? nil : "audio"
        let media = audios.enumerated().map { index, audio in
            HLSRendition(type: "AUDIO", groupID: "audio", name: audio.track.language ?? "audio \(index)", language: audio.track.language,
                         isDefault: index == 0, channels: audio.track.channelCount.map(String.init), uri: "\(audio.name)/index.m3u8")
        }
        let audioPeak = audios.compactMap { written[$0.name]?.peakBitrate }.max() ?? 0
        let audioAverage = audios.compactMap { written[$0.name]?.averageBitrate }.max() ?? 0
        let audioCodecs = audios.first.flatMap { written[$0.name]?.codecs }
        var variants: [HLSVariant] = videos.compactMap { video in
            guard let w = written[video.name] else { return nil }
            let frameRate = Double(video.track.samples.count) / max(video.track.durationSeconds, 0.001)
            return HLSVariant(bandwidth: w.peakBitrate + audioPeak, averageBandwidth: w.averageBitrate + audioAverage,
                              codecs: ([w.codecs] + (audioCodecs.map { [$0] } ?? [])).joined(separator: ","),
                              resolution: video.track.width.flatMap { width in video.track.height.map { (width, $0) } },
                              frameRate: (frameRate * 1000).rounded() / 1000, audioGroup: audioGroup, uri: "\(video.name)/index.m3u8")
        }
        if videos.isEmpty {
            variants = audios.compactMap { audio in
                written[audio.name].map { HLSVariant(bandwidth: $0.peakBitrate, averageBandwidth: $0.averageBitrate, codecs: $0.codecs,
                                                     uri: "\(audio.name)/index.m3u8") }
            }
        }
        variants.sort { $0.bandwidth < $1.bandwidth }
        // Offline FairPlay: declare every key in the master playlist so clients can preload them.
        var sessionKeys: [HLSKey] = []
        for (key, _) in keys { sessionKeys += try keyTags(key) }
        let master = HLSMasterPlaylist(version: options.format == .cmaf ? 7 : 5, sessionKeys: sessionKeys,
                                       renditions: videos.isEmpty ? [] : media, variants: variants)
        try directory.write(master.text, to: "master.m3u8")
    }
}
