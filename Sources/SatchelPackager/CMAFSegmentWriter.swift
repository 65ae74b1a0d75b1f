import SatchelBytes
import SatchelMedia
import SatchelProtection

/// Writes the init and media segments of one CMAF rendition, optionally with CENC.
struct CMAFSegmentWriter {
    let track: MediaTrack
    let protection: FMP4Protection?
    /// The package's decode-time zero, in this track's timescale: every track's decode times start from it, and
    /// the init segment's edit list puts the track where the input had it on the presentation timeline.
    private let origin: Int64
    private let cipher: CommonEncryption?
    private let lengthSize: Int
    private let sliceContext: H264SliceContext?
    private var nextIV: UInt64
    private var sequence: UInt32 = 0
    /// The first segments are left clear (a clear lead): the init segment lists a clear sample entry for them.
    private let clearLead: Bool

    /// `psshBoxes` go into the init segment: the DRM systems' signalling for `key`.
    init(track: MediaTrack, origin: Int64, scheme: CommonEncryption.Scheme?, key: ContentKey?, psshBoxes: [[UInt8]], clearLead: Bool = false) throws(PackagerError) {
        self.clearLead = clearLead
        var placed = track
        placed.presentationOffset = track.presentationOffset.addingReportingOverflow(origin).partialValue
        self.track = placed
        self.origin = origin
        if let scheme, let key {
            do {
                let transform = try CommonEncryption(scheme: scheme, key: key.key, iv: key.iv)
                cipher = transform
                protection = transform.protection(keyID: key.keyID, kind: track.kind, psshBoxes: psshBoxes)
            } catch {
                throw .invalidOptions("\(error)")
            }
        } else {
            cipher = nil
            protection = nil
        }
        let avc = track.codec == .h264 ? try? AVCDecoderConfiguration(track.codecConfiguration) : nil
        lengthSize = avc?.lengthSize ?? 4
        sliceContext = avc.flatMap { H264SliceContext(configuration: $0) }
        var pool = SecureRandom.Pool(capacity: 8)
        nextIV = pool.next() >> 1  // room to count up without wrapping
    }

    /// The init segment.
    func initSegment(averageBitrate: UInt32) -> [UInt8] {
        FMP4Writer.initSegment(for: track, protection: protection, averageBitrate: averageBitrate, clearLead: clearLead)
    }

    /// One media segment in two parts: `header`, the 'moof' and the 'mdat' header; and the samples' bytes, read
    /// from `input` into `payload` and encrypted where they lie, so that no sample is copied after it is read; a
    /// `clear` segment of a clear lead is left as it is, naming the clear sample entry. Returns the payload's length
    /// (the buffer may be longer: its capacity and pages are reused).
    mutating func segment(_ samples: ArraySlice<MediaSample>, from input: InputMedia, header: inout [UInt8],
                          payload: inout [UInt8], clear: Bool = false) throws(PackagerError) -> Int {
        sequence += 1
        let length = try input.read(samples, into: &payload)
        let cipher = clear ? nil : cipher
        var fragmentSamples: [FragmentSample] = []
        fragmentSamples.reserveCapacity(samples.count)
        var position = 0
        for sample in samples {
            let size = sample.byteCount
            var iv: [UInt8] = []
            var subsamples: [Subsample] = []
            if let cipher {
                if track.kind == .video {
                    do {
                        subsamples = try CommonEncryption.videoSubsamples(payload[position..<(position + size)], codec: track.codec,
                                                                          lengthSize: lengthSize, sliceContext: sliceContext)
                    } catch {
                        throw .input(file: "track \(track.id)", reason: "sample at \(sample.dts): \(error)")
                    }
                }
                if cipher.scheme == .cenc {
                    iv = (0..<8).map { UInt8(truncatingIfNeeded: nextIV >> (56 - 8 * UInt64($0))) }
                    nextIV &+= 1
                }
            }
            fragmentSamples.append(FragmentSample(duration: sample.duration, ctsOffset: sample.ctsOffset, isSync: sample.isSync,
                                                  byteCount: size, iv: iv, subsamples: subsamples))
            position += size
        }
        let base = UInt64(max(samples.first.map { $0.dts - origin } ?? 0, 0))
        FMP4Writer.fragmentHeader(sequenceNumber: sequence, baseDecodeTime: base, samples: fragmentSamples, protection: clear ? nil : protection,
                                  sampleDescriptionIndex: clear && protection != nil ? FMP4Writer.clearLeadEntry : nil,
                                  indexTimescale: clearLead && protection != nil ? track.timescale : nil, into: &header)
        guard let cipher else { return length }
        position = 0
        for (sample, written) in zip(samples, fragmentSamples) {
            let range = position..<(position + written.byteCount)
            do {
                try cipher.encrypt(&payload, sampleAt: range, subsamples: written.subsamples, iv: written.iv, isVideo: track.kind == .video)
            } catch {
                throw .input(file: "track \(track.id)", reason: "sample at \(sample.dts): \(error)")
            }
            position = range.upperBound
        }
        return length
    }
}
