import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection
import SatchelSystem

/// What a rendition's playlist said once written: its bit rates and codecs, for the master playlist and the MPD.
struct WrittenRendition {
    var playlist: HLSMediaPlaylist
    var peakBitrate: Int
    var averageBitrate: Int
    var codecs: String
}

/// The DASH MPD of a CMAF package: an adaptation set per kind, a representation per rendition with its segment
/// timeline, and the protection the package's scheme declares.
struct PackageMPD {
    let options: PackageOptions

    func write(_ renditions: [Rendition], _ written: [String: WrittenRendition], to directory: PackageDirectory,
               key: ContentKey?) throws(PackagerError) {
        var sets: [DASHAdaptationSet] = []
        for kind in [MediaKind.video, .audio] {
            let members = renditions.filter { $0.track.kind == kind }
            guard !members.isEmpty else { continue }
            var protection: [DASHContentProtection] = []
            if let key, options.scheme == .cenc || options.scheme == .cbcs {
                protection = try DRMSignalling(options: options).contentProtection(key)
            }
            let representations = members.map { rendition -> DASHRepresentation in
                let track = rendition.track
                var timeline: [(t: UInt64?, d: UInt64, r: Int)] = []
                let origin = track.samples.first?.dts ?? 0
                for range in rendition.segments {
                    let start = UInt64(max(track.samples[range.lowerBound].dts - origin, 0))
                    let duration = UInt64(track.samples[range].reduce(Int64(0)) { $0 + Int64($1.duration) })
                    if let last = timeline.last, last.d == duration {
                        timeline[timeline.count - 1].r += 1
                    } else {
                        timeline.append((timeline.isEmpty ? start : nil, duration, 0))
                    }
                }
                let template = DASHSegmentTemplate(timescale: UInt64(track.timescale), initialization: "\(rendition.name)/init.mp4",
                                                   media: "\(rendition.name)/segment_$Number$.m4s", startNumber: 1, timeline: timeline)
                let frameRate = Double(track.samples.count) / max(track.durationSeconds, 0.001)
                return DASHRepresentation(id: rendition.name, bandwidth: written[rendition.name]?.peakBitrate ?? 0,
                                          codecs: written[rendition.name]?.codecs, width: track.width, height: track.height,
                                          frameRate: kind == .video ? formatRate(frameRate) : nil,
                                          audioSamplingRate: track.sampleRate, audioChannels: track.channelCount, segmentTemplate: template)
            }
            sets.append(DASHAdaptationSet(contentType: kind.rawValue, mimeType: kind == .video ? "video/mp4" : "audio/mp4",
                                          language: kind == .audio ? members.first?.track.language : nil,
                                          contentProtection: protection, representations: representations))
        }
        let duration = renditions.map(\.track.durationSeconds).max()
        try directory.write(DASHManifest(duration: duration, adaptationSets: sets).text, to: "manifest.mpd")
    }

    private func formatRate(_ rate: Double) -> String {
        let rounded = (rate * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
