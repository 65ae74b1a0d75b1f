import SatchelBytes
import SatchelMedia
import SatchelProtection

/// Writes the init and media segments of one CMAF rendition, optionally with CENC.
struct CMAFSegmentWriter {
    let track: MediaTrack
    let protection: FMP4Protection?
    private let cipher: CommonEncryption?
    private let lengthSize: Int
    private let sliceContext: H264SliceContext?
    private var nextIV: UInt64
    private var sequence: UInt32 = 0

    init(track: MediaTrack, scheme: CommonEncryption.Scheme?, key: ContentKey?) throws(PackagerError) {
        self.track = track
        if let scheme, let key {
            do {
                let transform = try CommonEncryption(scheme: scheme, key: key.key, iv: key.iv)
                cipher = transform
                protection = transform.protection(keyID: key.keyID, kind: track.kind, psshBoxes: [PSSH.box(keyIDs: [key.keyID])])
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
        FMP4Writer.initSegment(for: track, protection: protection, averageBitrate: averageBitrate)
    }

    /// One media segment, written into `out` (its capacity is reused from segment to segment).
    mutating func segment(_ samples: ArraySlice<MediaSample>, into out: inout [UInt8]) throws(PackagerError) {
        sequence += 1
        var fragmentSamples: [FragmentSample] = []
        fragmentSamples.reserveCapacity(samples.count)
        for sample in samples {
            var data = sample.data
            var iv: [UInt8] = []
            var subsamples: [Subsample] = []
            if let cipher {
                do {
                    if track.kind == .video {
                        subsamples = try CommonEncryption.videoSubsamples(sample.data, codec: track.codec, lengthSize: lengthSize,
                                                                          sliceContext: sliceContext)
                    }
                    if cipher.scheme == .cenc {
                        iv = (0..<8).map { UInt8(truncatingIfNeeded: nextIV >> (56 - 8 * UInt64($0))) }
                        nextIV &+= 1
                    }
                    var encrypted = Array(sample.data)
                    try cipher.encrypt(&encrypted, subsamples: subsamples, iv: iv, isVideo: track.kind == .video)
                    data = encrypted[...]
                } catch {
                    throw .input(file: "track \(track.id)", reason: "sample at \(sample.dts): \(error)")
                }
            }
            fragmentSamples.append(FragmentSample(duration: sample.duration, ctsOffset: sample.ctsOffset, isSync: sample.isSync,
                                                  data: data, iv: iv, subsamples: subsamples))
        }
        let base = UInt64(max(samples.first.map { $0.dts - (track.samples.first?.dts ?? 0) } ?? 0, 0))
        FMP4Writer.mediaSegment(sequenceNumber: sequence, baseDecodeTime: base, samples: fragmentSamples, protection: protection, into: &out)
    }
}
