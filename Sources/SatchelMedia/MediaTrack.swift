/// What a track carries.
public enum MediaKind: String, Sendable, Codable {
    case video, audio
}

/// The codecs Satchel packages.
public enum MediaCodec: String, Sendable, Codable {
    case h264, hevc, aac, ac3, eac3

    /// The kind of media the codec carries.
    public var kind: MediaKind {
        switch self {
        case .h264, .hevc: return .video
        case .aac, .ac3, .eac3: return .audio
        }
    }
}

/// One access unit: a video frame or an audio frame.
///
/// Video samples are length-prefixed NAL units (4-byte lengths, as in MP4); AAC samples are raw
/// frames without ADTS headers. ``data`` is a slice of the input where possible, so demuxing a
/// large file copies nothing.
public struct MediaSample: Sendable {
    /// Decode time in the track timescale.
    public var dts: Int64
    /// Presentation time minus decode time.
    public var ctsOffset: Int32
    /// Duration in the track timescale.
    public var duration: UInt32
    /// True for a sync sample (IDR frame, or any audio frame).
    public var isSync: Bool
    /// The sample bytes (empty for a sample demuxed from a file's layout until they are read: see ``fileRange``).
    public var data: ArraySlice<UInt8>
    /// Where the bytes are in the file, for a sample demuxed from the file's layout (``MP4Demuxer/demux(layout:)``),
    /// whose media data was not read; nil when ``data`` holds them.
    public var fileRange: Range<Int>?

    /// Presentation time in the track timescale.
    public var pts: Int64 { dts + Int64(ctsOffset) }

    /// The sample's length in bytes, read or not.
    public var byteCount: Int { fileRange?.count ?? data.count }

    /// Creates a sample.
    public init(dts: Int64, ctsOffset: Int32 = 0, duration: UInt32, isSync: Bool, data: ArraySlice<UInt8>, fileRange: Range<Int>? = nil) {
        self.dts = dts
        self.ctsOffset = ctsOffset
        self.duration = duration
        self.isSync = isSync
        self.data = data
        self.fileRange = fileRange
    }
}

/// One elementary stream of an input: its codec setup and its samples in decode order.
public struct MediaTrack: Sendable {
    /// Track ID in the source.
    public var id: UInt32
    /// Codec.
    public var codec: MediaCodec
    /// Ticks per second of sample times.
    public var timescale: UInt32
    /// ISO 639-2 language, if known.
    public var language: String?
    /// Video width in pixels.
    public var width: Int?
    /// Video height in pixels.
    public var height: Int?
    /// Audio sample rate.
    public var sampleRate: Int?
    /// Audio channel count.
    public var channelCount: Int?
    /// Codec configuration: AVCDecoderConfigurationRecord (avcC), HEVCDecoderConfigurationRecord (hvcC),
    /// AudioSpecificConfig (AAC), or the dac3/dec3 payload.
    public var codecConfiguration: [UInt8]
    /// Samples in decode order.
    public var samples: [MediaSample]
    /// Where the track's media times sit on the presentation timeline, in the track timescale: a sample presents at
    /// `pts + presentationOffset`. An MP4 edit list says it (`-media_time`, plus any empty edit before it: a B-frame
    /// delay, AAC priming); an MPEG-TS input's first timestamp is its zero. Every output keeps it, so audio and video
    /// stay in sync: CMAF as an edit list, MPEG-TS in the timestamps.
    public var presentationOffset: Int64 = 0

    /// Creates a track.
    public init(id: UInt32, codec: MediaCodec, timescale: UInt32, language: String? = nil, width: Int? = nil, height: Int? = nil,
                sampleRate: Int? = nil, channelCount: Int? = nil, codecConfiguration: [UInt8], samples: [MediaSample]) {
        self.id = id
        self.codec = codec
        self.timescale = timescale
        self.language = language
        self.width = width
        self.height = height
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.codecConfiguration = codecConfiguration
        self.samples = samples
    }

    /// The kind of media.
    public var kind: MediaKind { codec.kind }

    /// Total duration in seconds.
    public var durationSeconds: Double {
        guard let first = samples.first, let last = samples.last else { return 0 }
        return Double(last.dts + Int64(last.duration) - first.dts) / Double(max(timescale, 1))
    }

    /// Total sample bytes.
    public var byteCount: Int { samples.reduce(0) { $0 + $1.byteCount } }
}
