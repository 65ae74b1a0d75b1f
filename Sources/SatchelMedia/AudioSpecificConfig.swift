import SatchelBytes

/// MPEG-4 AudioSpecificConfig (ISO/IEC 14496-3): the AAC decoder setup.
public struct AudioSpecificConfig: Sendable, Equatable {
    /// Audio object type (2 = AAC-LC, 5 = SBR/HE-AAC, 29 = PS/HE-AACv2).
    public var objectType: UInt8
    /// Sampling frequency index (0-12), or 15 with an explicit rate.
    public var frequencyIndex: UInt8
    /// The sampling rate in Hz.
    public var sampleRate: Int
    /// Channel configuration (1 = mono, 2 = stereo, …).
    public var channelConfiguration: UInt8

    /// The sampling rates of indexes 0-12.
    public static let sampleRates = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]

    /// Parses the config bytes.
    public init(_ bytes: [UInt8]) throws(MediaError) {
        var bits = BitReader(bytes)
        do {
            var type = UInt8(try bits.read(5))
            if type == 31 { type = UInt8(32 + (try bits.read(6))) }
            objectType = type
            frequencyIndex = UInt8(try bits.read(4))
            if frequencyIndex == 15 {
                sampleRate = Int(try bits.read(24))
            } else {
                guard Int(frequencyIndex) < Self.sampleRates.count else { throw MediaError.malformed("AAC sampling frequency index \(frequencyIndex)") }
                sampleRate = Self.sampleRates[Int(frequencyIndex)]
            }
            channelConfiguration = UInt8(try bits.read(4))
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("AudioSpecificConfig")
        }
    }

    /// A config from its fields (AAC-LC by default).
    public init(objectType: UInt8 = 2, sampleRate: Int, channelConfiguration: UInt8) throws(MediaError) {
        guard let index = Self.sampleRates.firstIndex(of: sampleRate) else { throw .unsupported("AAC sample rate \(sampleRate)") }
        self.objectType = objectType
        self.frequencyIndex = UInt8(index)
        self.sampleRate = sampleRate
        self.channelConfiguration = channelConfiguration
    }

    /// The two-byte encoding (object types below 31, indexed rates).
    public var bytes: [UInt8] {
        let value = UInt16(objectType & 0x1f) << 11 | UInt16(frequencyIndex & 0x0f) << 7 | UInt16(channelConfiguration & 0x0f) << 3
        return [UInt8(value >> 8), UInt8(value & 0xff)]
    }

    /// The RFC 6381 codecs string, e.g. "mp4a.40.2".
    public var codecsString: String { "mp4a.40.\(objectType)" }

    /// A 7-byte ADTS header (no CRC) for a raw frame of `payloadLength` bytes.
    public func adtsHeader(payloadLength: Int) -> [UInt8] {
        let length = payloadLength + 7
        let profile = max(Int(objectType) - 1, 0) & 0x3
        return [
            0xFF, 0xF1,
            UInt8(profile << 6 | Int(frequencyIndex & 0x0f) << 2 | Int(channelConfiguration >> 2) & 0x1),
            UInt8(Int(channelConfiguration & 0x3) << 6 | (length >> 11) & 0x3),
            UInt8((length >> 3) & 0xff),
            UInt8((length & 0x7) << 5 | 0x1f),
            0xFC,
        ]
    }
}

/// One ADTS frame header (ISO/IEC 13818-7): what a decoder needs to find the raw AAC frame.
public struct ADTSHeader: Sendable, Equatable {
    /// Header length: 7, or 9 with a CRC.
    public var headerLength: Int
    /// Whole frame length, header included.
    public var frameLength: Int
    /// The decoder config the header describes.
    public var config: AudioSpecificConfig

    /// Parses the header at the start of `bytes`.
    public init(_ bytes: ArraySlice<UInt8>) throws(MediaError) {
        guard bytes.count >= 7 else { throw .truncated("ADTS header") }
        let b = Array(bytes.prefix(7))
        guard b[0] == 0xFF, b[1] & 0xF6 == 0xF0 else { throw .malformed("no ADTS sync word") }
        headerLength = b[1] & 0x01 == 1 ? 7 : 9
        let profile = (b[2] >> 6) + 1
        let index = (b[2] >> 2) & 0x0f
        let channels = (b[2] & 0x1) << 2 | b[3] >> 6
        frameLength = Int(b[3] & 0x3) << 11 | Int(b[4]) << 3 | Int(b[5] >> 5)
        guard frameLength >= headerLength else { throw .malformed("ADTS frame length \(frameLength)") }
        guard Int(index) < AudioSpecificConfig.sampleRates.count else { throw .malformed("ADTS sampling frequency index \(index)") }
        config = try AudioSpecificConfig(objectType: profile, sampleRate: AudioSpecificConfig.sampleRates[Int(index)], channelConfiguration: channels)
    }
}
