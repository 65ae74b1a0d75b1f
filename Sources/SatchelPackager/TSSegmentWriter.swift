import SatchelBytes
import SatchelMedia
import SatchelProtection

/// Writes the MPEG-TS segments of one rendition, optionally with SAMPLE-AES.
struct TSSegmentWriter {
    /// Presentation times start here (1.4 s, as common HLS muxers do) so that PCR and DTS stay positive.
    static let timestampOffset: Int64 = 126_000

    private var muxer: TSMuxer
    private let stream: TSStream
    private let track: MediaTrack
    private let avc: AVCDecoderConfiguration?
    private let audioConfig: AudioSpecificConfig?
    private let lengthSize: Int
    private let firstDTS: Int64

    init(track: MediaTrack, sampleAES: Bool, firstDTS: Int64) throws(PackagerError) {
        self.track = track
        self.firstDTS = firstDTS
        var base: TSStream
        switch track.codec {
        case .h264: base = .h264
        case .aac: base = .aac
        case .ac3: base = .ac3
        case .eac3: base = .eac3
        case .hevc: throw .invalidOptions("HEVC is not supported in MPEG-TS output; use --format cmaf")
        }
        if sampleAES {
            guard track.codec == .h264 || track.codec == .aac else {
                throw .invalidOptions("SAMPLE-AES supports H.264 and AAC; \(track.codec.rawValue) is not supported")
            }
            base = SampleAES.tsStream(for: track, base: base)
        }
        stream = base
        muxer = TSMuxer(streams: [stream])
        do {
            avc = track.codec == .h264 ? try AVCDecoderConfiguration(track.codecConfiguration) : nil
            audioConfig = track.codec == .aac ? try AudioSpecificConfig(track.codecConfiguration) : nil
        } catch {
            throw .input(file: "track \(track.id)", reason: "\(error)")
        }
        lengthSize = avc?.lengthSize ?? 4
    }

    private func ticks90k(_ value: Int64) -> Int64 {
        (value - firstDTS) * 90_000 / Int64(max(track.timescale, 1)) + Self.timestampOffset
    }

    /// One segment's bytes (before any whole-segment encryption), written into `out`, whose
    /// capacity is reused from segment to segment.
    mutating func segment(_ samples: ArraySlice<MediaSample>, sampleAES: SampleAES?, into out: inout [UInt8]) throws(PackagerError) {
        out.removeAll(keepingCapacity: true)
        out += muxer.tables()
        out.reserveCapacity(samples.reduce(0) { $0 + $1.data.count } * 105 / 100 + 4096)
        for sample in samples {
            let dts = ticks90k(sample.dts), pts = ticks90k(sample.pts)
            let parts: [ArraySlice<UInt8>]
            do {
                switch track.codec {
                case .h264:
                    guard let avc else { throw PackagerError.invalidOptions("missing avcC") }
                    var units = try NALUnit.splitLengthPrefixed(sample.data, lengthSize: lengthSize)
                    if let sampleAES {
                        units = try units.map { try sampleAES.encryptVideoNAL($0)[...] }
                    }
                    parts = H264AnnexB.accessUnitParts(units, configuration: avc, isSync: sample.isSync)
                case .aac:
                    guard let audioConfig else { throw PackagerError.invalidOptions("missing AudioSpecificConfig") }
                    let header = audioConfig.adtsHeader(payloadLength: sample.data.count)
                    if let sampleAES {
                        parts = [try sampleAES.encryptAudioFrame(header + sample.data, headerLength: 7)[...]]
                    } else {
                        parts = [header[...], sample.data]
                    }
                default:
                    parts = [sample.data]
                }
            } catch let error as PackagerError {
                throw error
            } catch {
                throw .input(file: "track \(track.id)", reason: "sample at \(sample.dts): \(error)")
            }
            muxer.pes(stream, pts: pts, dts: track.kind == .video ? dts : nil, parts: parts,
                      pcr: dts - 63_000, randomAccess: sample.isSync && track.kind == .video, into: &out)
        }
    }
}
