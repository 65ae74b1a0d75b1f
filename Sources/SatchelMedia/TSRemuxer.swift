/// Remuxes clear fragmented-MP4 samples (a DASH or CMAF segment read with its init segment) into one MPEG-2 TS
/// segment: PAT and PMT first, then every sample of every track as a PES packet, interleaved by decode time.
/// Timestamps are the samples' own (from `tfdt`) placed on the presentation timeline by the init segment's edit list
/// (``MediaTrack/presentationOffset``), in 90 kHz units, shifted by ``timestampOffset`` as the packager's TS segments
/// are, so a segment remuxed from a CMAF package carries the packets of the TS package of the same input.
public enum TSRemuxer {
    /// Added to every timestamp (1.4 s) so that PCR and DTS stay positive.
    public static let timestampOffset: Int64 = 126_000

    /// One TS segment holding the samples of `tracks` (at most one video track; it carries the PCR).
    public static func segment(_ tracks: [MediaTrack]) throws(MediaError) -> [UInt8] {
        var continuity = TSContinuity()
        return try segment(tracks, continuity: &continuity)
    }

    /// ``segment(_:)`` with its continuity counters going on from `continuity` (the rendition's previous segment),
    /// which then holds where they stand for the next one.
    public static func segment(_ tracks: [MediaTrack], continuity: inout TSContinuity) throws(MediaError) -> [UInt8] {
        let prepared = try Prepared(tracks)
        var out: [UInt8] = []
        out.reserveCapacity(prepared.maximumSize)
        prepared.write(continuity: &continuity, into: &out)
        return out
    }

    /// A segment ready to be written: its tracks' streams and each sample's PES payload in the order they go out,
    /// and the most bytes the segment can take, so that memory for it can be had before it is written.
    public struct Prepared {
        private var streams: [TSStream] = []
        private var pieces: [(stream: Int, pts: Int64, dts: Int64?, parts: [ArraySlice<UInt8>], pcr: Int64, randomAccess: Bool)] = []
        /// At least the bytes the segment takes (the tables, and each PES packet's packets counted as if each
        /// carried no more than 176 bytes, the least a packet with a PCR carries).
        public private(set) var maximumSize = 2 * TSMuxer.packetSize

        /// `tracks` (at most one video track; it carries the PCR) laid out: PIDs 0x100 on, samples merged by decode time.
        public init(_ tracks: [MediaTrack]) throws(MediaError) {
            let ordered = tracks.filter { $0.kind == .video } + tracks.filter { $0.kind != .video }
            guard ordered.filter({ $0.kind == .video }).count <= 1 else { throw .unsupported("more than one video track in one segment") }
            var formatters: [TSSampleFormatter] = []
            for (index, track) in ordered.enumerated() {
                let formatter = try TSSampleFormatter(track: track)
                var stream = formatter.stream
                // Each track its own PID: video 0x100, audio from 0x101 on.
                stream.pid = 0x100 + UInt16(index)
                formatters.append(formatter)
                streams.append(stream)
            }
            // Merge the tracks by decode time (in 90 kHz units; video first on a tie).
            var next = [Int](repeating: 0, count: ordered.count)
            while true {
                var pick: (track: Int, dts: Int64)?
                for (index, track) in ordered.enumerated() where next[index] < track.samples.count {
                    let dts = ticks90k(track.samples[next[index]].dts + track.presentationOffset, timescale: track.timescale)
                    if pick.map({ dts < $0.dts }) ?? true { pick = (index, dts) }
                }
                guard let (index, dts) = pick else { break }
                let track = ordered[index]
                let sample = track.samples[next[index]]
                next[index] += 1
                let parts = try formatters[index].clearParts(sample)
                let pesSize = parts.reduce(19) { $0 + $1.count }  // the longest PES header, then the payload
                maximumSize += (pesSize + 175) / 176 * TSMuxer.packetSize
                pieces.append((index, ticks90k(sample.pts + track.presentationOffset, timescale: track.timescale), track.kind == .video ? dts : nil,
                               parts, dts - 63_000, sample.isSync && track.kind == .video))
            }
        }

        /// Writes the segment (tables first) to `out`; its counters go on from `continuity`, which then holds where
        /// they stand.
        public func write(continuity: inout TSContinuity, into out: inout [UInt8]) {
            mux(continuity: &continuity, into: &out)
        }

        /// The same, into memory the caller gives: at least ``maximumSize`` bytes (less overflows `out`).
        public func write(continuity: inout TSContinuity, into out: inout TSBufferOutput) {
            mux(continuity: &continuity, into: &out)
        }

        private func mux<Output: TSOutput>(continuity: inout TSContinuity, into out: inout Output) {
            var muxer = TSMuxer(streams: streams, continuity: continuity)
            muxer.tables().withUnsafeBytes { out.emit($0) }
            for piece in pieces {
                muxer.packetize(streams[piece.stream], pts: piece.pts, dts: piece.dts, parts: piece.parts, pcr: piece.pcr,
                                randomAccess: piece.randomAccess, into: &out)
            }
            continuity = muxer.state
        }
    }

    /// `value` ticks of `timescale` in 90 kHz units plus the offset; computed without overflow for any input
    /// (TS timestamps are 33 bits: the muxer keeps the low ones).
    public static func ticks90k(_ value: Int64, timescale: UInt32) -> Int64 {
        let scale = Int64(max(timescale, 1))
        let (product, overflow) = value.multipliedReportingOverflow(by: 90_000)
        if !overflow { return product / scale + timestampOffset }  // the packager's own formula
        let magnitude = value.magnitude / UInt64(scale) & 0x3FFF_FFFF  // seconds, wrapped well inside 33 bits of 90 kHz
        return Int64(magnitude) * 90_000 * (value < 0 ? -1 : 1) + timestampOffset
    }
}
