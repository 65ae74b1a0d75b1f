import SatchelBytes

/// A Smooth Streaming quality level as a track: what its fragments carry, from the manifest alone (Smooth has no
/// init segment; the codec setup is the `FourCC` and `CodecPrivateData` of the quality level).
extension SmoothManifest.QualityLevel {
    /// The track (without samples) that a fragment of this level is read as; `kind` is the stream's `Type`.
    public func track(kind: String, timescale: UInt64) throws(MediaError) -> MediaTrack {
        guard let scale = UInt32(exactly: timescale), scale > 0 else { throw .malformed("Smooth TimeScale \(timescale)") }
        let fourCC = (self.fourCC ?? "").uppercased()
        let privateData: [UInt8]
        do { privateData = try Hex.decode(codecPrivateData ?? "") } catch { throw .malformed("CodecPrivateData is not hexadecimal") }
        switch kind.lowercased() {
        case "video":
            guard ["H264", "AVC1", "DAVC"].contains(fourCC) else { throw .unsupported("Smooth video \(fourCC.prefix(8)) (H.264 is carried)") }
            // Annex B: start codes before the SPS and the PPS.
            let units = NALUnit.splitAnnexB(privateData[...])
            var configuration = try AVCDecoderConfiguration(sps: units.filter { NALUnit.h264Type($0.first ?? 0) == 7 }.map { Array($0) },
                                                            pps: units.filter { NALUnit.h264Type($0.first ?? 0) == 8 }.map { Array($0) })
            let lengthSize = nalUnitLengthField ?? 4
            guard [1, 2, 4].contains(lengthSize) else { throw .malformed("NALUnitLengthField \(lengthSize)") }
            configuration.lengthSize = lengthSize
            return MediaTrack(id: 1, codec: .h264, timescale: scale, width: maxWidth, height: maxHeight,
                              codecConfiguration: configuration.bytes, samples: [])
        case "audio":
            guard ["AACL", "AACH", "MP4A"].contains(fourCC) else { throw .unsupported("Smooth audio \(fourCC.prefix(8)) (AAC is carried)") }
            let config: AudioSpecificConfig
            if privateData.isEmpty {
                // No CodecPrivateData: AAC-LC at the level's rate and channel count.
                guard let rate = samplingRate, let channels = channels, (1...7).contains(channels) else {
                    throw .malformed("Smooth AAC without CodecPrivateData, SamplingRate or Channels")
                }
                config = try AudioSpecificConfig(sampleRate: rate, channelConfiguration: UInt8(channels))
            } else {
                config = try AudioSpecificConfig(privateData)
            }
            return MediaTrack(id: 2, codec: .aac, timescale: scale, sampleRate: config.sampleRate, channelCount: Int(config.channelConfiguration),
                              codecConfiguration: privateData.isEmpty ? config.bytes : privateData, samples: [])
        default:
            throw .unsupported("Smooth \(kind.prefix(16)) streams")
        }
    }
}

extension MP4Demuxer {
    /// The samples of a fragment without its init segment (a Smooth Streaming fragment: 'moof' and 'mdat'), read as
    /// `track`; every 'traf' belongs to it. Decode times are the fragment's own ('tfdt') or start at `startDTS`
    /// (Smooth gives the time in the manifest and the fragment's URL).
    public static func demuxFragment(_ bytes: [UInt8], track: MediaTrack, startDTS: Int64) throws(MediaError) -> MediaTrack {
        var out = track
        var nextDTS = startDTS
        let top = try MP4Box.children(of: bytes, in: 0..<bytes.count)
        for moof in top.all("moof") {
            for traf in try moof.children(in: bytes).all("traf") {
                let fragment = try TrackFragmentReader(traf: traf, moof: moof, bytes: bytes, defaults: TrackDefaults(duration: 0, size: 0, flags: 0),
                                                       nextDTS: nextDTS)
                out.samples += fragment.samples
                if let last = fragment.samples.last { nextDTS = last.dts + Int64(last.duration) }
            }
        }
        guard !out.samples.isEmpty else { throw .malformed("the fragment holds no samples") }
        return out
    }
}
