import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection

/// The Smooth Streaming form of a package (`--format smooth`): PIFF fragments at `QualityLevels(bitrate)/Fragments(
/// video=time)` (`cenc` samples, their sample encryption in PIFF's `uuid` box), the client manifest `Manifest` (a
/// stream per kind, a quality level per rendition, times in each track's timescale; for `cenc`, the PlayReady header
/// of the key), and the server manifest `manifest.ism` (SMIL) that names it.
struct SmoothOutput {
    let options: PackageOptions
    /// Each rendition's quality level bit rate: the input track's, made unique within its kind.
    let bitrates: [String: Int]

    init(options: PackageOptions, renditions: [Rendition]) throws(PackagerError) {
        self.options = options
        var bitrates: [String: Int] = [:]
        for kind in [MediaKind.video, .audio] {
            let members = renditions.filter { $0.track.kind == kind }
            guard let first = members.first else { continue }
            // One timeline per stream: every quality level cut at the same times, in the same timescale.
            for member in members.dropFirst() {
                guard member.track.timescale == first.track.timescale, member.segmentStartTimes == first.segmentStartTimes else {
                    throw .invalidOptions("Smooth Streaming needs the \(kind.rawValue) renditions cut at the same times (the same frame rate and key frames)")
                }
            }
            var used = Set<Int>()
            for member in members {
                var rate = max(1, Int(Double(member.track.byteCount * 8) / max(member.track.durationSeconds, 0.001)))
                while !used.insert(rate).inserted { rate += 1 }
                bitrates[member.name] = rate
            }
        }
        self.bitrates = bitrates
    }

    /// Each rendition's decode-time zero, in its track's ticks. Smooth Streaming has no edit lists: a fragment's time
    /// is its first sample's decode time from this zero, and a sample presents at its decode time plus its composition
    /// offset. So each track's zero is set for its samples to present where the input's edit list put them (`pts +
    /// presentationOffset`), every track later by the same amount — the most any track's first sample would otherwise
    /// present before zero —: audio and video keep the source's offset (a B-frame delay in the video, AAC priming in
    /// the audio), where one zero for all would play the audio early by the difference.
    static func origins(_ renditions: [Rendition]) -> [String: Int64] {
        var lead: (ticks: Int64, timescale: UInt32) = (0, 1)
        for rendition in renditions {
            guard let first = rendition.track.samples.first?.dts else { continue }
            let ticks = -(first + rendition.track.presentationOffset), timescale = max(rendition.track.timescale, 1)
            if Double(ticks) / Double(timescale) > Double(lead.ticks) / Double(lead.timescale) { lead = (ticks, timescale) }
        }
        var origins: [String: Int64] = [:]
        for rendition in renditions {
            origins[rendition.name] = -rendition.track.presentationOffset - EditList.converted(lead.ticks, from: lead.timescale, to: rendition.track.timescale)
        }
        return origins
    }

    /// Where a rendition's fragment starting at `time` (its track's ticks from the package's zero) is written.
    func fragmentPath(_ rendition: Rendition, time: UInt64) -> String {
        "QualityLevels(\(bitrates[rendition.name] ?? 0))/Fragments(\(rendition.track.kind.rawValue)=\(time))"
    }

    /// The fragment `header` (a `moof`, then the `mdat` header) as PIFF.
    func fragmentHeader(_ header: [UInt8]) throws(PackagerError) -> [UInt8] {
        do { return try PIFFFragment.fromCENC(header) } catch { throw .output("PIFF fragment: \(error)") }
    }

    /// Writes `Manifest` and `manifest.ism` for `renditions`, whose fragments start at `times` (with their durations).
    func writeManifests(_ renditions: [Rendition], times: [String: [(start: UInt64, duration: UInt64)]], key: ContentKey?,
                        to directory: PackageDirectory) throws(PackagerError) {
        var streams: [SmoothManifest.StreamIndex] = []
        var duration: UInt64 = 0
        for kind in [MediaKind.video, .audio] {
            let members = renditions.filter { $0.track.kind == kind }
            guard let first = members.first, let timeline = times[first.name] else { continue }
            let levels = members.enumerated().map { index, rendition in level(rendition, index: index) }
            streams.append(SmoothManifest.StreamIndex(type: kind.rawValue, name: kind.rawValue, language: kind == .audio ? first.track.language : nil,
                                                      timescale: UInt64(first.track.timescale),
                                                      url: "QualityLevels({bitrate})/Fragments(\(kind.rawValue)={start time})", qualityLevels: levels,
                                                      fragmentTimes: timeline.map(\.start), fragmentDurations: timeline.map(\.duration)))
            duration = max(duration, UInt64(max(first.track.durationSeconds, 0) * 10_000_000))
        }
        var protection: String?
        if let key, options.scheme == .cenc {
            do {
                let object = try PlayReadyHeader.object(keyID: key.keyID, key: key.key, scheme: .cenc, licenseURL: options.playReadyLicenseURL)
                protection = Data(options.psshBoxes[.playReady].flatMap { try? PSSH.parse($0).data } ?? object).base64EncodedString()
            } catch {
                throw .invalidOptions("\(error)")
            }
        }
        try directory.write(SmoothManifest(duration: duration, streams: streams, protectionHeader: protection).text, to: "Manifest")
        var smil = [#"<?xml version="1.0" encoding="utf-8"?>"#, #"<smil xmlns="http://www.w3.org/2001/SMIL20/Language">"#,
                    #"  <head><meta name="clientManifestRelativePath" content="Manifest"/></head>"#, "  <body>", "    <switch>"]
        for rendition in renditions {
            let element = rendition.track.kind == .video ? "video" : "audio"
            smil.append("      <\(element) src=\"QualityLevels(\(bitrates[rendition.name] ?? 0))\" systemBitrate=\"\(bitrates[rendition.name] ?? 0)\">"
                        + "<param name=\"trackName\" value=\"\(element)\" valueType=\"data\"/></\(element)>")
        }
        smil += ["    </switch>", "  </body>", "</smil>"]
        try directory.write(smil.joined(separator: "\n") + "\n", to: "manifest.ism")
    }

    private func level(_ rendition: Rendition, index: Int) -> SmoothManifest.QualityLevel {
        let track = rendition.track
        let bitrate = bitrates[rendition.name] ?? 0
        switch track.codec {
        case .h264:
            let avc = try? AVCDecoderConfiguration(track.codecConfiguration)
            let parameters = ((avc?.sps ?? []) + (avc?.pps ?? [])).map { "00000001" + Hex.encode($0) }.joined().uppercased()
            return .init(index: index, bitrate: bitrate, fourCC: "H264", maxWidth: track.width, maxHeight: track.height, codecPrivateData: parameters,
                         nalUnitLengthField: avc?.lengthSize ?? 4)
        case .aac:
            // The audio attributes the client manifest lists, as ffmpeg's Smooth muxer writes them for AAC.
            return .init(index: index, bitrate: bitrate, fourCC: "AACL", samplingRate: track.sampleRate, channels: track.channelCount,
                         codecPrivateData: Hex.encode(track.codecConfiguration).uppercased(), bitsPerSample: 16, packetSize: 4, audioTag: 255)
        case .ac3, .eac3, .hevc:
            return .init(index: index, bitrate: bitrate, fourCC: track.codec == .hevc ? "HEV1" : track.codec == .ac3 ? "AC-3" : "EC-3",
                         maxWidth: track.width, maxHeight: track.height, samplingRate: track.sampleRate, channels: track.channelCount,
                         codecPrivateData: Hex.encode(track.codecConfiguration).uppercased())
        }
    }
}
