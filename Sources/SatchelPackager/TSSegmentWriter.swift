import SatchelBytes
import SatchelMedia
import SatchelProtection

/// Writes the MPEG-TS segments of one rendition, optionally with SAMPLE-AES.
struct TSSegmentWriter {
    private var muxer: TSMuxer
    /// The stream the segment being written carries: SAMPLE-AES's stream type and descriptors, or the clear ones in
    /// a clear lead's segments.
    private var stream: TSStream
    private let clearStream: TSStream
    private let protectedStream: TSStream
    private let track: MediaTrack
    private let formatter: TSSampleFormatter

    /// `firstSample` is the track's first sample (an AC-3 track's SAMPLE-AES setup information quotes its header).
    init(track: MediaTrack, sampleAES: Bool, firstSample: [UInt8] = []) throws(PackagerError) {
        self.track = track
        do { formatter = try TSSampleFormatter(track: track) } catch {
            if case .unsupported = error { throw .invalidOptions("HEVC is not supported in MPEG-TS output; use --format cmaf") }
            throw .input(file: "track \(track.id)", reason: "\(error)")
        }
        clearStream = formatter.stream
        var base = formatter.stream
        if sampleAES {
            guard track.codec != .hevc else { throw .invalidOptions("SAMPLE-AES supports H.264, AAC, AC-3 and E-AC-3; HEVC is not supported") }
            base = SampleAES.tsStream(for: track, base: base, firstFrame: firstSample)
        }
        protectedStream = base
        stream = base
        muxer = TSMuxer(streams: [stream])
    }

    /// Starts a segment in `out` (whose capacity is reused from segment to segment) with the PAT and PMT, room made
    /// for `sampleBytes` of samples; ``append(_:sampleAES:into:)`` then adds the samples, in as many pieces as suit.
    /// A `clear` segment (a clear lead's) carries the clear stream type, as a clear package's would; the counters
    /// go on from segment to segment either way.
    mutating func begin(sampleBytes: Int, clear: Bool = false, into out: inout [UInt8]) {
        let wanted = clear ? clearStream : protectedStream
        if wanted != stream {
            stream = wanted
            muxer = TSMuxer(streams: [stream], continuity: muxer.state)
        }
        out.removeAll(keepingCapacity: true)
        out += muxer.tables()
        // Room for the packets' headers; a buffer that must grow gets a quarter more, so that the next, larger
        // segments reuse its pages instead of allocating (and faulting in) fresh ones.
        let needed = sampleBytes * 105 / 100 + 4096
        if out.capacity < needed { out.reserveCapacity(needed + needed / 4) }
    }

    /// The PES packets of `samples` (their bytes loaded), after those already in `out`.
    mutating func append(_ samples: ArraySlice<MediaSample>, sampleAES: SampleAES?, into out: inout [UInt8]) throws(PackagerError) {
        for sample in samples {
            // Timestamps on the presentation timeline (the input's edit list applied), as a CMAF segment of the same
            // package remuxed to TS would carry them: audio and video keep their place relative to each other.
            let dts = TSRemuxer.ticks90k(sample.dts + track.presentationOffset, timescale: track.timescale)
            let pts = TSRemuxer.ticks90k(sample.pts + track.presentationOffset, timescale: track.timescale)
            let parts: [ArraySlice<UInt8>]
            do {
                switch (track.codec, sampleAES, formatter.avc, formatter.audioConfig) {
                case let (.h264, sampleAES?, avc?, _):
                    let units = try formatter.nalUnits(sample).map { try sampleAES.encryptVideoNAL($0)[...] }
                    parts = H264AnnexB.accessUnitParts(units, configuration: avc, isSync: sample.isSync)
                case let (.aac, sampleAES?, _, audioConfig?):
                    let header = audioConfig.adtsHeader(payloadLength: sample.data.count)
                    parts = [try sampleAES.encryptAudioFrame(header + sample.data, headerLength: 7)[...]]
                case let (.ac3, sampleAES?, _, _), let (.eac3, sampleAES?, _, _):
                    // Each syncframe of the sample on its own: 16 bytes clear, then its whole blocks.
                    let bytes = Array(sample.data)
                    parts = try AC3Syncframe.frames(in: bytes[...]).map { try sampleAES.encryptAudioFrame(Array(bytes[$0]), headerLength: 0)[...] }
                default:
                    parts = try formatter.clearParts(sample)
                }
            } catch {
                throw .input(file: "track \(track.id)", reason: "sample at \(sample.dts): \(error)")
            }
            muxer.pes(stream, pts: pts, dts: track.kind == .video ? dts : nil, parts: parts,
                      pcr: dts - 63_000, randomAccess: sample.isSync && track.kind == .video, into: &out)
        }
    }
}
