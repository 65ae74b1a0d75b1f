/// How one track's samples become PES payloads in MPEG-2 TS: H.264 as Annex B access units (an AUD first, SPS
/// and PPS before every sync sample), AAC behind an ADTS header, AC-3 and E-AC-3 as they are. Shared by the
/// packager's TS segments and the playback proxy's fMP4-to-TS remux, so both write the same bytes.
public struct TSSampleFormatter: Sendable {
    /// The track's codec.
    public let codec: MediaCodec
    /// The clear stream the track maps to (PID 0x100 for video, 0x101 for audio).
    public let stream: TSStream
    /// The H.264 configuration (SPS, PPS, NAL length size).
    public let avc: AVCDecoderConfiguration?
    /// The AAC configuration (for the ADTS header).
    public let audioConfig: AudioSpecificConfig?

    /// A formatter for `track`; HEVC (not carried in Satchel's TS) and an unreadable configuration are refused.
    public init(track: MediaTrack) throws(MediaError) {
        codec = track.codec
        switch track.codec {
        case .h264: stream = .h264
        case .aac: stream = .aac
        case .ac3: stream = .ac3
        case .eac3: stream = .eac3
        case .hevc: throw .unsupported("HEVC is not carried in MPEG-TS here; use CMAF")
        }
        avc = track.codec == .h264 ? try AVCDecoderConfiguration(track.codecConfiguration) : nil
        audioConfig = track.codec == .aac ? try AudioSpecificConfig(track.codecConfiguration) : nil
    }

    /// An H.264 sample's NAL units (without their length prefixes).
    public func nalUnits(_ sample: MediaSample) throws(MediaError) -> [ArraySlice<UInt8>] {
        try NALUnit.splitLengthPrefixed(sample.data, lengthSize: avc?.lengthSize ?? 4)
    }

    /// The PES payload of a clear sample, as consecutive parts.
    public func clearParts(_ sample: MediaSample) throws(MediaError) -> [ArraySlice<UInt8>] {
        switch codec {
        case .h264:
            guard let avc else { throw .malformed("missing avcC") }
            return H264AnnexB.accessUnitParts(try nalUnits(sample), configuration: avc, isSync: sample.isSync)
        case .aac:
            guard let audioConfig else { throw .malformed("missing AudioSpecificConfig") }
            return [audioConfig.adtsHeader(payloadLength: sample.data.count)[...], sample.data]
        default:
            return [sample.data]
        }
    }
}
