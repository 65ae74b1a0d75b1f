import SatchelBytes

/// Reads the tracks and samples of an MP4 / MOV file, progressive or fragmented.
public enum MP4Demuxer {
    /// Demuxes `bytes`. Tracks other than H.264, HEVC, AAC, AC-3 and E-AC-3 are skipped; a file
    /// with none of those is an error.
    public static func demux(_ bytes: [UInt8]) throws(MediaError) -> [MediaTrack] {
        let top = try MP4Box.children(of: bytes, in: 0..<bytes.count)
        guard let moov = top.first("moov") else { throw .malformed("no 'moov' box: not an MP4/MOV file") }
        let moovChildren = try moov.children(in: bytes)
        var tracks: [MediaTrack] = []
        var defaults: [UInt32: TrackDefaults] = [:]
        if let mvex = moovChildren.first("mvex") {
            for trex in try mvex.children(in: bytes).all("trex") {
                var (_, _, reader) = try trex.fullBoxReader(in: bytes)
                do {
                    let id = try reader.readUInt32()
                    _ = try reader.readUInt32()
                    defaults[id] = TrackDefaults(duration: try reader.readUInt32(), size: try reader.readUInt32(), flags: try reader.readUInt32())
                } catch { throw .truncated("'trex'") }
            }
        }
        for trak in moovChildren.all("trak") {
            if var track = try readTrack(trak, bytes) {
                let fragmentDefaults = defaults[track.id] ?? TrackDefaults(duration: 0, size: 0, flags: 0)
                track.samples += try fragmentSamples(top, bytes, trackID: track.id, defaults: fragmentDefaults,
                                                     startDTS: track.samples.last.map { $0.dts + Int64($0.duration) } ?? 0)
                if !track.samples.isEmpty { tracks.append(track) }
            }
        }
        guard !tracks.isEmpty else { throw .unsupported("no H.264, HEVC, AAC, AC-3 or E-AC-3 track with samples") }
        return tracks
    }

    struct TrackDefaults {
        var duration: UInt32
        var size: UInt32
        var flags: UInt32
    }

    private static func readTrack(_ trak: MP4Box, _ bytes: [UInt8]) throws(MediaError) -> MediaTrack? {
        let children = try trak.children(in: bytes)
        let tkhd = try children.required("tkhd", in: "trak")
        var (version, _, tkhdReader) = try tkhd.fullBoxReader(in: bytes)
        let id: UInt32
        do {
            try tkhdReader.skip(version == 1 ? 16 : 8)
            id = try tkhdReader.readUInt32()
        } catch { throw .truncated("'tkhd'") }
        let mdia = try children.required("mdia", in: "trak").children(in: bytes)
        let (timescale, language) = try readMediaHeader(try mdia.required("mdhd", in: "mdia"), bytes)
        let minf = try mdia.required("minf", in: "mdia").children(in: bytes)
        let stbl = try minf.required("stbl", in: "minf").children(in: bytes)
        guard var track = try SampleEntryReader.read(try stbl.required("stsd", in: "stbl"), bytes, trackID: id, timescale: timescale) else {
            return nil
        }
        track.language = language
        track.samples = try SampleTable(stbl, bytes).samples(in: bytes, isAudio: track.kind == .audio)
        return track
    }

    private static func readMediaHeader(_ mdhd: MP4Box, _ bytes: [UInt8]) throws(MediaError) -> (UInt32, String?) {
        var (version, _, reader) = try mdhd.fullBoxReader(in: bytes)
        do {
            try reader.skip(version == 1 ? 16 : 8)
            let timescale = try reader.readUInt32()
            guard timescale > 0 else { throw MediaError.malformed("'mdhd' timescale is 0") }
            try reader.skip(version == 1 ? 8 : 4)
            let packed = try reader.readUInt16()
            let letters = [(packed >> 10) & 0x1f, (packed >> 5) & 0x1f, packed & 0x1f].map { UInt8($0 + 0x60) }
            let language = String(decoding: letters, as: UTF8.self)
            return (timescale, letters.allSatisfy { (0x61...0x7a).contains($0) } && language != "und" ? language : nil)
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("'mdhd'")
        }
    }

    /// Samples of `trackID` from every 'moof' of the file.
    private static func fragmentSamples(_ top: [MP4Box], _ bytes: [UInt8], trackID: UInt32, defaults: TrackDefaults,
                                        startDTS: Int64) throws(MediaError) -> [MediaSample] {
        var samples: [MediaSample] = []
        var nextDTS = startDTS
        for moof in top.all("moof") {
            for traf in try moof.children(in: bytes).all("traf") {
                let fragment = try TrackFragmentReader(traf: traf, moof: moof, bytes: bytes, defaults: defaults, nextDTS: nextDTS)
                guard fragment.trackID == trackID else { continue }
                samples += fragment.samples
                if let last = fragment.samples.last { nextDTS = last.dts + Int64(last.duration) }
            }
        }
        return samples
    }
}
