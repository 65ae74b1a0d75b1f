import SatchelBytes

/// Reads the first sample entry of an 'stsd' box into a track's codec setup.
enum SampleEntryReader {
    static func read(_ stsd: MP4Box, _ bytes: [UInt8], trackID: UInt32, timescale: UInt32) throws(MediaError) -> MediaTrack? {
        // full box (4) + entry_count (4)
        guard let entry = try stsd.children(in: bytes, skip: 8).first else { throw .malformed("'stsd' has no sample entry") }
        switch entry.type {
        case "avc1", "avc3":
            return try visual(entry, bytes, trackID: trackID, timescale: timescale, codec: .h264, configBox: "avcC")
        case "hvc1", "hev1":
            return try visual(entry, bytes, trackID: trackID, timescale: timescale, codec: .hevc, configBox: "hvcC")
        case "mp4a":
            return try audio(entry, bytes, trackID: trackID, timescale: timescale, codec: .aac)
        case "ac-3":
            return try audio(entry, bytes, trackID: trackID, timescale: timescale, codec: .ac3)
        case "ec-3":
            return try audio(entry, bytes, trackID: trackID, timescale: timescale, codec: .eac3)
        case "encv", "enca":
            throw .unsupported("the input is already encrypted (sample entry '\(entry.type)')")
        default:
            return nil
        }
    }

    private static func visual(_ entry: MP4Box, _ bytes: [UInt8], trackID: UInt32, timescale: UInt32, codec: MediaCodec,
                               configBox: FourCC) throws(MediaError) -> MediaTrack {
        var reader = entry.reader(in: bytes)
        let width: Int, height: Int
        do {
            try reader.skip(24)
            width = Int(try reader.readUInt16())
            height = Int(try reader.readUInt16())
        } catch { throw .truncated("visual sample entry '\(entry.type)'") }
        let children = try entry.children(in: bytes, skip: 78)
        let config = try children.required(configBox, in: entry.type.description)
        return MediaTrack(id: trackID, codec: codec, timescale: timescale, width: width, height: height,
                          codecConfiguration: Array(bytes[config.payload]), samples: [])
    }

    private static func audio(_ entry: MP4Box, _ bytes: [UInt8], trackID: UInt32, timescale: UInt32,
                              codec: MediaCodec) throws(MediaError) -> MediaTrack {
        var reader = entry.reader(in: bytes)
        let version: UInt16, channels: Int, rate: Int
        do {
            try reader.skip(8)
            version = try reader.readUInt16()
            try reader.skip(6)
            channels = Int(try reader.readUInt16())
            try reader.skip(6)
            rate = Int(try reader.readUInt32() >> 16)
        } catch { throw .truncated("audio sample entry '\(entry.type)'") }
        let skip = 28 + (version == 1 ? 16 : version == 2 ? 36 : 0)
        let children = try entry.children(in: bytes, skip: skip)
        var track = MediaTrack(id: trackID, codec: codec, timescale: timescale, sampleRate: rate, channelCount: channels,
                               codecConfiguration: [], samples: [])
        switch codec {
        case .aac:
            // QuickTime files put 'esds' inside a 'wave' box.
            let wave = try children.first("wave").map { (box) throws(MediaError) in try box.children(in: bytes) } ?? []
            guard let esds = children.first("esds") ?? wave.first("esds") else { throw .malformed("'mp4a' has no 'esds' box") }
            track.codecConfiguration = try ElementaryStreamDescriptor.audioSpecificConfig(Array(bytes[esds.payload].dropFirst(4)))
            let config = try AudioSpecificConfig(track.codecConfiguration)
            track.sampleRate = config.sampleRate
            if config.channelConfiguration > 0 { track.channelCount = Int(config.channelConfiguration) }
        case .ac3:
            track.codecConfiguration = children.first("dac3").map { Array(bytes[$0.payload]) } ?? []
        default:
            track.codecConfiguration = children.first("dec3").map { Array(bytes[$0.payload]) } ?? []
        }
        return track
    }
}

/// MPEG-4 elementary stream descriptors ('esds'): finds the AudioSpecificConfig, and writes an esds payload.
package enum ElementaryStreamDescriptor {
    /// The DecoderSpecificInfo (tag 5) inside an ES_Descriptor (tag 3).
    package static func audioSpecificConfig(_ descriptor: [UInt8]) throws(MediaError) -> [UInt8] {
        var reader = ByteReader(descriptor)
        do {
            guard try readTag(&reader, expecting: 0x03) else { throw MediaError.malformed("esds: no ES_Descriptor") }
            try reader.skip(2)
            let flags = try reader.readUInt8()
            if flags & 0x80 != 0 { try reader.skip(2) }
            if flags & 0x40 != 0 { try reader.skip(Int(try reader.readUInt8())) }
            if flags & 0x20 != 0 { try reader.skip(2) }
            guard try readTag(&reader, expecting: 0x04) else { throw MediaError.malformed("esds: no DecoderConfigDescriptor") }
            let objectType = try reader.readUInt8()
            guard objectType == 0x40 || objectType == 0x67 || objectType == 0x66 else {
                throw MediaError.unsupported("MPEG-4 audio object type indication 0x\(String(objectType, radix: 16)) (only AAC)")
            }
            try reader.skip(12)
            guard try readTag(&reader, expecting: 0x05) else { throw MediaError.malformed("esds: no DecoderSpecificInfo") }
            return reader.readRemainingOfDescriptor()
        } catch let error as MediaError {
            throw error
        } catch {
            throw .truncated("esds")
        }
    }

    /// Reads a descriptor tag and length; leaves `reader` limited to that descriptor's body.
    private static func readTag(_ reader: inout ByteReader, expecting tag: UInt8) throws -> Bool {
        guard try reader.readUInt8() == tag else { return false }
        var length = 0
        for _ in 0..<4 {
            let byte = try reader.readUInt8()
            length = length << 7 | Int(byte & 0x7f)
            if byte & 0x80 == 0 { break }
        }
        reader = try reader.subReader(length)
        return true
    }

    /// An esds payload (after version/flags) for AAC with `config` and the given bit rates.
    package static func payload(audioSpecificConfig config: [UInt8], maxBitrate: UInt32, averageBitrate: UInt32) -> [UInt8] {
        func descriptor(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
            [tag, 0x80, 0x80, 0x80, UInt8(body.count & 0x7f)] + body
        }
        var decoderConfig = ByteWriter()
        decoderConfig.writeUInt8(0x40)  // MPEG-4 audio
        decoderConfig.writeUInt8(0x15)  // audio stream, upstream 0, reserved 1
        decoderConfig.writeUInt24(0)
        decoderConfig.writeUInt32(maxBitrate)
        decoderConfig.writeUInt32(averageBitrate)
        let decoder = descriptor(0x04, decoderConfig.bytes + descriptor(0x05, config))
        let es = descriptor(0x03, [0, 0, 0] + decoder + descriptor(0x06, [0x02]))
        return es
    }
}

extension ByteReader {
    /// The rest of this (descriptor-limited) reader.
    fileprivate mutating func readRemainingOfDescriptor() -> [UInt8] { readRemaining() }
}
