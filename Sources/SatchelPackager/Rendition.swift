import SatchelMedia

/// One output rendition: a track cut into segments.
struct Rendition {
    /// Directory and playlist name ("video_0", "audio_0").
    let name: String
    /// The input the track is read from.
    let input: InputMedia
    /// The source track.
    let track: MediaTrack
    /// Sample index ranges of each segment.
    let segments: [Range<Int>]

    /// Duration of a segment in seconds.
    func duration(of segment: Range<Int>) -> Double {
        let ticks = track.samples[segment].reduce(Int64(0)) { $0 + Int64($1.duration) }
        return Double(ticks) / Double(max(track.timescale, 1))
    }

    /// Start times of segments in seconds (used to align audio with video).
    var segmentStartTimes: [Double] {
        segments.map { Double(track.samples[$0.lowerBound].dts - (track.samples.first?.dts ?? 0)) / Double(max(track.timescale, 1)) }
    }
}

/// Cuts tracks into segments: video at keyframes near the target duration, audio at the video's cut times.
enum SegmentPlanner {
    /// Video: a new segment starts at the first keyframe at least `target` seconds after the current one started.
    static func videoSegments(_ track: MediaTrack, target: Double) -> [Range<Int>] {
        let samples = track.samples
        guard let first = samples.first else { return [] }
        let targetTicks = Int64(target * Double(track.timescale) * 0.999)
        var segments: [Range<Int>] = []
        var start = 0
        var startDTS = first.dts
        for index in 1..<max(samples.count, 1) where samples[index].isSync && samples[index].dts - startDTS >= targetTicks {
            segments.append(start..<index)
            start = index
            startDTS = samples[index].dts
        }
        segments.append(start..<samples.count)
        return segments
    }

    /// Audio: cut at the given start times (seconds from the track start), or every `target` seconds.
    static func audioSegments(_ track: MediaTrack, boundaries: [Double]?, target: Double) -> [Range<Int>] {
        let samples = track.samples
        guard let first = samples.first else { return [] }
        let scale = Double(max(track.timescale, 1))
        var cuts = boundaries.map { Array($0.dropFirst()) } ?? []
        if boundaries == nil {
            let total = track.durationSeconds
            var time = target
            while time < total - 0.001 { cuts.append(time); time += target }
        }
        var segments: [Range<Int>] = []
        var start = 0
        var cutIndex = 0
        for index in samples.indices where cutIndex < cuts.count {
            if Double(samples[index].dts - first.dts) / scale >= cuts[cutIndex] - 0.0005, index > start {
                segments.append(start..<index)
                start = index
                cutIndex += 1
                while cutIndex < cuts.count, Double(samples[index].dts - first.dts) / scale >= cuts[cutIndex] { cutIndex += 1 }
            }
        }
        segments.append(start..<samples.count)
        return segments
    }
}
