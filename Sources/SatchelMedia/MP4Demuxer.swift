import SatchelBytes

/// Reads the tracks and samples of an MP4 / MOV file, progressive or fragmented.
public enum MP4Demuxer {
    /// Demuxes `bytes`. Tracks other than H.264, HEVC, AAC, AC-3 and E-AC-3 are skipped; a file
    /// with none of those is an error.
    public static func demux(_ bytes: [UInt8]) throws(MediaError) -> [MediaTrack] {
        let top = try MP4Box.children(of: bytes, in: 0..<bytes.count)
        guard let moov = top.first("moov") else { throw .malformed("no 'moov' box: not an MP4/MOV file") }
        let source = SampleSource.inline(bytes)
        return try demux(moov: (moov, bytes, source), fragments: top.all("moof").map { ($0, bytes, source) })
    }

    /// Demuxes a fragmented track from its init segment and one media segment, each read where it lies (no joined
    /// copy); an empty init segment means the media segment holds its own `moov`.
    public static func demux(initSegment: [UInt8], media: [UInt8]) throws(MediaError) -> [MediaTrack] {
        guard !initSegment.isEmpty else { return try demux(media) }
        guard let moov = try MP4Box.children(of: initSegment, in: 0..<initSegment.count).first("moov") else {
            throw .malformed("no 'moov' box in the init segment")
        }
        let source = SampleSource.inline(media)
        return try demux(moov: (moov, initSegment, .inline(initSegment)),
                         fragments: try MP4Box.children(of: media, in: 0..<media.count).all("moof").map { ($0, media, source) })
    }

    /// Demuxes a file from its layout: its metadata boxes, read apart from its media data. The samples carry their
    /// ``MediaSample/fileRange`` and no bytes, so a file of any size is demuxed in the memory its metadata takes.
    public static func demux(layout: MP4Layout) throws(MediaError) -> [MediaTrack] {
        var moov: (MP4Box, [UInt8], SampleSource)?
        var fragments: [(MP4Box, [UInt8], SampleSource)] = []
        for box in layout.boxes where box.type == "moov" || box.type == "moof" {
            let read = try MP4Box.children(of: box.bytes, in: 0..<box.bytes.count)
            guard read.count == 1, let only = read.first, only.type.description == box.type else {
                throw .malformed("the '\(box.type)' box at offset \(box.offset) is not one whole box")
            }
            let placed = (only, box.bytes, SampleSource.file(size: layout.fileSize, boxAt: box.offset))
            if box.type == "moov" {
                if moov == nil { moov = placed }
            } else {
                fragments.append(placed)
            }
        }
        guard let moov else { throw .malformed("no 'moov' box: not an MP4/MOV file") }
        return try demux(moov: moov, fragments: fragments)
    }

    /// The tracks of `moov` with the samples of every fragment (each box with the bytes it is read from and where its
    /// samples are).
    private static func demux(moov: (box: MP4Box, bytes: [UInt8], source: SampleSource),
                              fragments: [(box: MP4Box, bytes: [UInt8], source: SampleSource)]) throws(MediaError) -> [MediaTrack] {
        let bytes = moov.bytes
        let moovChildren = try moov.box.children(in: bytes)
        var movieTimescale: UInt32 = 1000
        if let mvhd = moovChildren.first("mvhd") { movieTimescale = try readMovieTimescale(mvhd, bytes) }
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
            if var track = try readTrack(trak, bytes, source: moov.source, movieTimescale: movieTimescale) {
                let fragmentDefaults = defaults[track.id] ?? TrackDefaults(duration: 0, size: 0, flags: 0)
                track.samples += try fragmentSamples(fragments, trackID: track.id, defaults: fragmentDefaults,
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

    private static func readTrack(_ trak: MP4Box, _ bytes: [UInt8], source: SampleSource, movieTimescale: UInt32) throws(MediaError) -> MediaTrack? {
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
        track.samples = try SampleTable(stbl, bytes, fileSize: source.fileSize).samples(in: bytes, isAudio: track.kind == .audio, source: source)
        if let edts = children.first("edts"), let elst = try edts.children(in: bytes).first("elst") {
            track.presentationOffset = try EditList.presentationOffset(elst, bytes, movieTimescale: movieTimescale, mediaTimescale: timescale)
        }
        return track
    }

    private static func readMovieTimescale(_ mvhd: MP4Box, _ bytes: [UInt8]) throws(MediaError) -> UInt32 {
        var (version, _, reader) = try mvhd.fullBoxReader(in: bytes)
        do {
            try reader.skip(version == 1 ? 16 : 8)
            return max(try reader.readUInt32(), 1)
        } catch { throw .truncated("'mvhd'") }
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

    /// Samples of `trackID` from every fragment of the file, in file order.
    private static func fragmentSamples(_ fragments: [(box: MP4Box, bytes: [UInt8], source: SampleSource)], trackID: UInt32,
                                        defaults: TrackDefaults, startDTS: Int64) throws(MediaError) -> [MediaSample] {
        var samples: [MediaSample] = []
        var nextDTS = startDTS
        for moof in fragments {
            for traf in try moof.box.children(in: moof.bytes).all("traf") {
                let fragment = try TrackFragmentReader(traf: traf, moof: moof.box, bytes: moof.bytes, defaults: defaults, nextDTS: nextDTS,
                                                       source: moof.source)
                guard fragment.trackID == trackID else { continue }
                samples += fragment.samples
                if let last = fragment.samples.last { nextDTS = last.dts + Int64(last.duration) }
            }
        }
        return samples
    }
}

/// The top-level boxes of an MP4 file that the demuxer reads (`moov`, `moof`), each whole and read apart, with the
/// file's size: every other box (`mdat` above all) stays unread, and samples are placed by file offset.
public struct MP4Layout: Sendable {
    /// One box read whole: its type, its offset in the file, and its bytes (header included).
    public struct Box: Sendable {
        /// The box type (`moov`, `moof`).
        public var type: String
        /// Its offset in the file.
        public var offset: Int
        /// Its bytes, header included.
        public var bytes: [UInt8]

        /// A box of `type` at `offset` in the file.
        public init(type: String, offset: Int, bytes: [UInt8]) {
            self.type = type
            self.offset = offset
            self.bytes = bytes
        }
    }

    /// The file's size in bytes.
    public var fileSize: Int
    /// The boxes read, in file order.
    public var boxes: [Box]

    /// A layout of a file of `fileSize` bytes.
    public init(fileSize: Int, boxes: [Box]) {
        self.fileSize = fileSize
        self.boxes = boxes
    }
}
