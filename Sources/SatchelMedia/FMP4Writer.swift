import SatchelBytes

/// Common Encryption settings of one fMP4 track (ISO/IEC 23001-7).
public struct FMP4Protection: Sendable, Equatable {
    /// 'cenc' (AES-CTR) or 'cbcs' (AES-CBC with pattern).
    public var scheme: FourCC
    /// The 16-byte key ID.
    public var keyID: [UInt8]
    /// Per-sample IV size in 'senc' (8 or 16), 0 with a constant IV.
    public var perSampleIVSize: UInt8
    /// The constant IV ('cbcs').
    public var constantIV: [UInt8]?
    /// Encrypted blocks of the pattern (cbcs video: 1).
    public var cryptByteBlock: UInt8
    /// Clear blocks of the pattern (cbcs video: 9).
    public var skipByteBlock: UInt8
    /// Whole 'pssh' boxes to put in 'moov'.
    public var psshBoxes: [[UInt8]]

    /// Creates protection settings.
    public init(scheme: FourCC, keyID: [UInt8], perSampleIVSize: UInt8, constantIV: [UInt8]? = nil,
                cryptByteBlock: UInt8 = 0, skipByteBlock: UInt8 = 0, psshBoxes: [[UInt8]] = []) {
        self.scheme = scheme
        self.keyID = keyID
        self.perSampleIVSize = perSampleIVSize
        self.constantIV = constantIV
        self.cryptByteBlock = cryptByteBlock
        self.skipByteBlock = skipByteBlock
        self.psshBoxes = psshBoxes
    }
}

/// A subsample: clear bytes followed by protected bytes.
public struct Subsample: Sendable, Equatable {
    /// Bytes left clear.
    public var clear: UInt16
    /// Bytes encrypted (or covered by the pattern).
    public var protected: UInt32

    /// Creates a subsample entry.
    public init(clear: UInt16, protected: UInt32) {
        self.clear = clear
        self.protected = protected
    }
}

/// One sample of a media segment.
public struct FragmentSample: Sendable {
    /// Duration in the track timescale.
    public var duration: UInt32
    /// Presentation minus decode time.
    public var ctsOffset: Int32
    /// Sync sample.
    public var isSync: Bool
    /// The (possibly encrypted) sample bytes; empty when the sample is described by ``byteCount`` alone.
    /// Setting them sets ``byteCount`` to their length.
    public var data: ArraySlice<UInt8> {
        didSet { byteCount = data.count }
    }
    /// The sample's length in bytes.
    public var byteCount: Int
    /// The per-sample IV ('cenc'), empty with a constant IV.
    public var iv: [UInt8]
    /// Subsamples; empty means the whole sample is one protected range (or the track is clear).
    public var subsamples: [Subsample]

    /// Creates a fragment sample.
    public init(duration: UInt32, ctsOffset: Int32, isSync: Bool, data: ArraySlice<UInt8>, iv: [UInt8] = [], subsamples: [Subsample] = []) {
        self.duration = duration
        self.ctsOffset = ctsOffset
        self.isSync = isSync
        self.data = data
        self.byteCount = data.count
        self.iv = iv
        self.subsamples = subsamples
    }

    /// A sample described by its length alone, for ``FMP4Writer/fragmentHeader(sequenceNumber:baseDecodeTime:samples:protection:sampleDescriptionIndex:indexTimescale:into:)``,
    /// whose bytes the caller writes after the header.
    public init(duration: UInt32, ctsOffset: Int32, isSync: Bool, byteCount: Int, iv: [UInt8] = [], subsamples: [Subsample] = []) {
        self.init(duration: duration, ctsOffset: ctsOffset, isSync: isSync, data: [], iv: iv, subsamples: subsamples)
        self.byteCount = byteCount
    }
}

/// Writes CMAF-style fragmented MP4: an init segment and media segments, one track each.
public enum FMP4Writer {
    /// The track ID used in every file.
    public static let trackID: UInt32 = 1

    /// The sample entry a clear lead's fragments name (``fragmentHeader(sequenceNumber:baseDecodeTime:samples:protection:sampleDescriptionIndex:indexTimescale:into:)``):
    /// the init segment of a protected track with a clear lead lists the protected entry first and this clear one after
    /// it, as Shaka Packager does (ISO/IEC 23001-7 9.1; CMAF 8.2.2).
    public static let clearLeadEntry: UInt32 = 2

    /// The init segment ('ftyp' + 'moov') for `track`; with `clearLead`, a protected track's `stsd` lists a clear
    /// sample entry after the protected one, for fragments that are not encrypted.
    public static func initSegment(for track: MediaTrack, protection: FMP4Protection?, averageBitrate: UInt32 = 0, clearLead: Bool = false) -> [UInt8] {
        var w = MP4BoxWriter()
        w.box("ftyp") { w in
            w.fourCC("iso6")
            w.u32(0)
            for brand: FourCC in ["iso6", "cmfc", "dash", "mp41"] { w.fourCC(brand) }
        }
        w.box("moov") { w in
            w.fullBox("mvhd") { w in
                w.u32(0); w.u32(0); w.u32(1000); w.u32(0)
                w.u32(0x0001_0000); w.u16(0x0100); w.zeros(10)
                writeMatrix(&w)
                w.zeros(24)
                w.u32(trackID + 1)
            }
            w.box("trak") { w in
                w.fullBox("tkhd", flags: 0x3) { w in
                    w.u32(0); w.u32(0); w.u32(trackID); w.u32(0); w.u32(0)
                    w.zeros(8); w.u16(0); w.u16(0)
                    w.u16(track.kind == .audio ? 0x0100 : 0); w.u16(0)
                    writeMatrix(&w)
                    w.u32(UInt32(track.width ?? 0) << 16)
                    w.u32(UInt32(track.height ?? 0) << 16)
                }
                // The track's place on the presentation timeline (a B-frame delay, AAC priming), as the input had it.
                let edits = EditList.entries(presentationOffset: track.presentationOffset, movieTimescale: 1000, mediaTimescale: track.timescale)
                if !edits.isEmpty {
                    w.box("edts") { w in
                        w.fullBox("elst", version: 1) { w in
                            w.u32(UInt32(edits.count))
                            for edit in edits {
                                w.u64(edit.duration)
                                w.u64(UInt64(bitPattern: edit.mediaTime))
                                w.u16(1); w.u16(0)  // media_rate 1.0
                            }
                        }
                    }
                }
                w.box("mdia") { w in
                    w.fullBox("mdhd") { w in
                        w.u32(0); w.u32(0); w.u32(track.timescale); w.u32(0)
                        w.u16(packedLanguage(track.language)); w.u16(0)
                    }
                    w.fullBox("hdlr") { w in
                        w.u32(0)
                        w.fourCC(track.kind == .video ? "vide" : "soun")
                        w.zeros(12)
                        w.bytes(Array((track.kind == .video ? "Satchel video" : "Satchel audio").utf8) + [0])
                    }
                    w.box("minf") { w in
                        if track.kind == .video {
                            w.fullBox("vmhd", flags: 1) { w in w.zeros(8) }
                        } else {
                            w.fullBox("smhd") { w in w.zeros(4) }
                        }
                        w.box("dinf") { w in
                            w.fullBox("dref") { w in
                                w.u32(1)
                                w.fullBox("url ", flags: 1) { _ in }
                            }
                        }
                        w.box("stbl") { w in
                            w.fullBox("stsd") { w in
                                let clearEntry = clearLead && protection != nil
                                w.u32(clearEntry ? 2 : 1)
                                writeSampleEntry(&w, track: track, protection: protection, averageBitrate: averageBitrate)
                                if clearEntry { writeSampleEntry(&w, track: track, protection: nil, averageBitrate: averageBitrate) }
                            }
                            w.fullBox("stts") { w in w.u32(0) }
                            w.fullBox("stsc") { w in w.u32(0) }
                            w.fullBox("stsz") { w in w.u32(0); w.u32(0) }
                            w.fullBox("stco") { w in w.u32(0) }
                        }
                    }
                }
            }
            w.box("mvex") { w in
                w.fullBox("trex") { w in w.u32(trackID); w.u32(1); w.u32(0); w.u32(0); w.u32(0) }
            }
            for pssh in protection?.psshBoxes ?? [] { w.bytes(pssh) }
        }
        return w.bytes
    }

    /// A media segment ('moof' + 'mdat') with `samples`, starting at `baseDecodeTime`.
    public static func mediaSegment(sequenceNumber: UInt32, baseDecodeTime: UInt64, samples: [FragmentSample],
                                    protection: FMP4Protection?) -> [UInt8] {
        var buffer: [UInt8] = []
        mediaSegment(sequenceNumber: sequenceNumber, baseDecodeTime: baseDecodeTime, samples: samples, protection: protection, into: &buffer)
        return buffer
    }

    /// The same, written into `buffer` (its capacity is reused).
    public static func mediaSegment(sequenceNumber: UInt32, baseDecodeTime: UInt64, samples: [FragmentSample],
                                    protection: FMP4Protection?, into buffer: inout [UInt8]) {
        buffer.reserveCapacity(samples.reduce(0) { $0 + $1.byteCount } + 256 + samples.count * 40)
        fragmentHeader(sequenceNumber: sequenceNumber, baseDecodeTime: baseDecodeTime, samples: samples, protection: protection, into: &buffer)
        for sample in samples { buffer.append(contentsOf: sample.data) }
    }

    /// The head of a media segment: the 'moof' and the 'mdat' header, for samples whose bytes (``FragmentSample/byteCount``
    /// each, in order) the caller writes right after it. Written into `buffer` (its capacity is reused). A
    /// `sampleDescriptionIndex` goes into the `tfhd` (a clear lead's fragment names ``clearLeadEntry``). With an
    /// `indexTimescale` (the track's), a segment index (`sidx`) of the one fragment comes first, as Shaka Packager writes
    /// one: a reader that parses fragments ahead of their samples (ffmpeg) needs it to keep a clear lead's sample entry
    /// apart from the next fragment's.
    public static func fragmentHeader(sequenceNumber: UInt32, baseDecodeTime: UInt64, samples: [FragmentSample],
                                      protection: FMP4Protection?, sampleDescriptionIndex: UInt32? = nil, indexTimescale: UInt32? = nil,
                                      into buffer: inout [UInt8]) {
        let total = samples.reduce(0) { $0 + $1.byteCount }
        var w = MP4BoxWriter(reusing: &buffer)
        w.reserve(256 + samples.count * 40)
        var referencedSizeField: Int?
        if let indexTimescale {
            var decode: Int64 = 0, earliest = Int64.max
            for sample in samples {
                earliest = min(earliest, decode + Int64(sample.ctsOffset))
                decode += Int64(sample.duration)
            }
            w.fullBox("sidx", version: 1) { w in
                w.u32(trackID); w.u32(indexTimescale)
                w.u64(UInt64(max(Int64(baseDecodeTime) + (samples.isEmpty ? 0 : earliest), 0)))
                w.u64(0)  // first_offset: the fragment follows
                w.u16(0); w.u16(1)
                referencedSizeField = w.count
                w.u32(0)  // reference_type 0 and referenced_size, patched once the fragment is written
                w.u32(UInt32(clamping: decode))
                w.u32(samples.first?.isSync == true ? 0x9000_0000 : 0)  // starts_with_SAP, SAP_type 1
            }
        }
        let moofStart = w.count
        var dataOffsetField = 0
        var auxiliaryDataStart = 0
        w.box("moof") { w in
            w.fullBox("mfhd") { w in w.u32(sequenceNumber) }
            w.box("traf") { w in
                w.fullBox("tfhd", flags: sampleDescriptionIndex == nil ? 0x02_0000 : 0x02_0002) { w in
                    w.u32(trackID)
                    if let sampleDescriptionIndex { w.u32(sampleDescriptionIndex) }
                }
                w.fullBox("tfdt", version: 1) { w in w.u64(baseDecodeTime) }
                w.fullBox("trun", version: 1, flags: 0xF01) { w in
                    w.u32(UInt32(samples.count))
                    dataOffsetField = w.count
                    w.u32(0)
                    for sample in samples {
                        w.u32(sample.duration)
                        w.u32(UInt32(clamping: sample.byteCount))
                        w.u32(sample.isSync ? 0x0200_0000 : 0x0101_0000)
                        w.u32(UInt32(bitPattern: sample.ctsOffset))
                    }
                }
                // Sample auxiliary information only where a sample has some: a track with a constant IV and
                // whole-sample encryption (cbcs audio) needs none, and a `saiz` of default size 0 with no table
                // is malformed (ISO/IEC 14496-12 8.7.8), so browsers refuse it.
                if let protection, protection.perSampleIVSize > 0 || samples.contains(where: { !$0.subsamples.isEmpty }) {
                    let useSubsamples = samples.contains { !$0.subsamples.isEmpty }
                    w.fullBox("senc", flags: useSubsamples ? 0x2 : 0) { w in
                        w.u32(UInt32(samples.count))
                        auxiliaryDataStart = w.count
                        for sample in samples {
                            w.bytes(sample.iv.prefix(Int(protection.perSampleIVSize)))
                            if useSubsamples {
                                w.u16(UInt16(sample.subsamples.count))
                                for sub in sample.subsamples { w.u16(sub.clear); w.u32(sub.protected) }
                            }
                        }
                    }
                    let sizes = samples.map { Int(protection.perSampleIVSize) + (useSubsamples ? 2 + 6 * $0.subsamples.count : 0) }
                    w.fullBox("saiz") { w in
                        let uniform = Set(sizes).count == 1
                        w.u8(uniform ? UInt8(clamping: sizes.first ?? 0) : 0)
                        w.u32(UInt32(samples.count))
                        if !uniform { for size in sizes { w.u8(UInt8(clamping: size)) } }
                    }
                    w.fullBox("saio") { w in
                        w.u32(1)
                        w.u32(UInt32(auxiliaryDataStart - moofStart))
                    }
                }
            }
        }
        // An mdat of 4 GiB or more takes the 64-bit size (ISO/IEC 14496-12 "largesize"), never a wrapped one.
        let large = total > Int(UInt32.max) - 8
        w.patchUInt32(UInt32(w.count - moofStart + (large ? 16 : 8)), at: dataOffsetField)
        if large {
            w.u32(1)
            w.fourCC("mdat")
            w.u64(UInt64(total) + 16)
        } else {
            w.u32(UInt32(total + 8))
            w.fourCC("mdat")
        }
        if let referencedSizeField { w.patchUInt32(UInt32(clamping: w.count - moofStart + total) & 0x7FFF_FFFF, at: referencedSizeField) }
        w.finish(into: &buffer)
    }

    private static func writeMatrix(_ w: inout MP4BoxWriter) {
        for value: UInt32 in [0x0001_0000, 0, 0, 0, 0x0001_0000, 0, 0, 0, 0x4000_0000] { w.u32(value) }
    }

    private static func packedLanguage(_ language: String?) -> UInt16 {
        let letters = Array((language ?? "und").utf8.prefix(3))
        guard letters.count == 3, letters.allSatisfy({ (0x61...0x7a).contains($0) }) else { return 0x55C4 }
        return letters.reduce(UInt16(0)) { $0 << 5 | UInt16($1 - 0x60) }
    }

    private static func writeSampleEntry(_ w: inout MP4BoxWriter, track: MediaTrack, protection: FMP4Protection?, averageBitrate: UInt32) {
        let original: FourCC
        switch track.codec {
        case .h264: original = "avc1"
        case .hevc: original = "hvc1"
        case .aac: original = "mp4a"
        case .ac3: original = "ac-3"
        case .eac3: original = "ec-3"
        }
        let type: FourCC = protection == nil ? original : (track.kind == .video ? "encv" : "enca")
        w.box(type) { w in
            w.zeros(6)
            w.u16(1)
            if track.kind == .video {
                w.zeros(16)
                w.u16(UInt16(clamping: track.width ?? 0))
                w.u16(UInt16(clamping: track.height ?? 0))
                w.u32(0x0048_0000); w.u32(0x0048_0000); w.u32(0); w.u16(1)
                w.zeros(32)
                w.u16(0x0018); w.u16(0xFFFF)
                let configType: FourCC = track.codec == .hevc ? "hvcC" : "avcC"
                w.box(configType) { w in w.bytes(track.codecConfiguration) }
            } else {
                w.zeros(8)
                w.u16(UInt16(clamping: track.channelCount ?? 2))
                w.u16(16); w.u16(0); w.u16(0)
                w.u32(UInt32(clamping: track.sampleRate ?? Int(track.timescale)) << 16)
                switch track.codec {
                case .aac:
                    w.fullBox("esds") { w in
                        w.bytes(ElementaryStreamDescriptor.payload(audioSpecificConfig: track.codecConfiguration,
                                                                   maxBitrate: averageBitrate, averageBitrate: averageBitrate))
                    }
                case .ac3: w.box("dac3") { w in w.bytes(track.codecConfiguration) }
                default: w.box("dec3") { w in w.bytes(track.codecConfiguration) }
                }
            }
            if let protection {
                w.box("sinf") { w in
                    w.box("frma") { w in w.fourCC(original) }
                    w.fullBox("schm") { w in w.fourCC(protection.scheme); w.u32(0x0001_0000) }
                    w.box("schi") { w in
                        let pattern = protection.cryptByteBlock != 0 || protection.skipByteBlock != 0 || protection.constantIV != nil
                        w.fullBox("tenc", version: pattern ? 1 : 0) { w in
                            w.u8(0)
                            w.u8(pattern ? protection.cryptByteBlock << 4 | protection.skipByteBlock : 0)
                            w.u8(1)
                            w.u8(protection.perSampleIVSize)
                            w.bytes(protection.keyID)
                            if protection.perSampleIVSize == 0, let iv = protection.constantIV {
                                w.u8(UInt8(iv.count))
                                w.bytes(iv)
                            }
                        }
                    }
                }
            }
        }
    }
}
