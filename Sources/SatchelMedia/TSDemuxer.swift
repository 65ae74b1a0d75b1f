import SatchelBytes

/// Reads H.264 and AAC elementary streams from an MPEG-TS file into tracks (90 kHz timescale).
public enum TSDemuxer {
    /// One PES packet of an elementary stream, as the transport stream carries it.
    public struct PES: Sendable {
        /// The PID that carries it.
        public var pid: UInt16
        /// The PES stream_id (0xE0 video, 0xC0 audio, ...).
        public var streamID: UInt8
        /// Timestamps, 90 kHz.
        public var pts: Int64?
        /// The decoding timestamp, when it differs from `pts` (90 kHz).
        public var dts: Int64?
        /// The elementary stream bytes after the PES header.
        public var payload: [UInt8]
        /// The random_access_indicator of its first transport packet.
        public var randomAccess: Bool
        /// The PCR (90 kHz base) of its first transport packet, if it has one.
        public var pcr: Int64?
    }

    /// Demuxes `bytes`. With `allowSampleAES`, SAMPLE-AES streams (0xDB, 0xCF) are read as H.264 and
    /// AAC so that a client can decrypt their samples; otherwise they are refused.
    public static func demux(_ bytes: [UInt8], allowSampleAES: Bool = false) throws(MediaError) -> [MediaTrack] {
        let (streams, all) = try packets(bytes)
        var packets: [UInt16: [PES]] = [:]
        for pes in all { packets[pes.pid, default: []].append(pes) }
        var tracks: [MediaTrack] = []
        for (pid, type) in streams {
            guard let pes = packets[pid], !pes.isEmpty else { continue }
            switch type {
            case 0x1B: tracks.append(try videoTrack(pid: pid, pes))
            case 0x0F: tracks.append(try audioTrack(pid: pid, pes))
            case 0xDB where allowSampleAES: tracks.append(try videoTrack(pid: pid, pes))
            case 0xCF where allowSampleAES: tracks.append(try audioTrack(pid: pid, pes))
            case 0xDB, 0xCF, 0xC1, 0xC2: throw .unsupported("the transport stream is already SAMPLE-AES encrypted")
            default: continue
            }
        }
        guard !tracks.isEmpty else { throw .unsupported("no H.264 or AAC stream in the transport stream") }
        // The stream's first timestamp is its zero: every track keeps its place relative to the others.
        let zero = tracks.compactMap { $0.samples.first?.dts }.min() ?? 0
        for index in tracks.indices { tracks[index].presentationOffset = -zero }
        return tracks
    }

    /// The elementary streams the PMT declares (PID and stream type, in PMT order) and every PES packet they
    /// carry, in the order the packets start.
    public static func packets(_ bytes: [UInt8]) throws(MediaError) -> (streams: [(pid: UInt16, streamType: UInt8)], pes: [PES]) {
        guard bytes.count >= TSMuxer.packetSize else { throw .truncated("MPEG-TS shorter than one packet") }
        var reader = TSPESReader()
        let pes = try reader.read(bytes[...]) + reader.finish()
        return (reader.streams, pes)
    }

    /// The streams the first PMT of `bytes` declares: PID, stream type and ES descriptors.
    public static func programStreams(_ bytes: [UInt8]) throws(MediaError) -> [(pid: UInt16, streamType: UInt8, descriptors: [UInt8])] {
        var pmtPID: UInt16?
        var offset = 0
        while offset + TSMuxer.packetSize <= bytes.count {
            let pusi = bytes[offset + 1] & 0x40 != 0
            let pid = UInt16(bytes[offset + 1] & 0x1F) << 8 | UInt16(bytes[offset + 2])
            let payload = bytes[(offset + 4)..<(offset + TSMuxer.packetSize)]
            offset += TSMuxer.packetSize
            if pid == 0, pusi { pmtPID = try parsePAT(payload) }
            else if pid == pmtPID, pusi {
                let body = try sectionBody(payload)
                guard body.count >= 4 else { throw .truncated("PMT") }
                let infoLength = Int(body[body.startIndex + 2] & 0x0F) << 8 | Int(body[body.startIndex + 3])
                var index = body.startIndex + 4 + infoLength
                var streams: [(UInt16, UInt8, [UInt8])] = []
                while index + 5 <= body.endIndex {
                    let esLength = Int(body[index + 3] & 0x0F) << 8 | Int(body[index + 4])
                    guard index + 5 + esLength <= body.endIndex else { throw .truncated("PMT ES info") }
                    streams.append((UInt16(body[index + 1] & 0x1F) << 8 | UInt16(body[index + 2]), body[index],
                                    Array(body[(index + 5)..<(index + 5 + esLength)])))
                    index += 5 + esLength
                }
                return streams
            }
        }
        throw .malformed("no PMT in the transport stream")
    }

    private static func sectionBody(_ payload: ArraySlice<UInt8>) throws(MediaError) -> ArraySlice<UInt8> {
        guard let pointer = payload.first else { throw .truncated("PSI section") }
        let start = payload.startIndex + 1 + Int(pointer)
        guard start + 3 <= payload.endIndex else { throw .truncated("PSI section") }
        let length = Int(payload[start + 1] & 0x0F) << 8 | Int(payload[start + 2])
        guard length >= 9, start + 3 + length <= payload.endIndex else { throw .truncated("PSI section of \(length) bytes") }
        return payload[(start + 8)..<(start + 3 + length - 4)]  // after the 5-byte extension header, before the CRC
    }

    static func parsePAT(_ payload: ArraySlice<UInt8>) throws(MediaError) -> UInt16? {
        let body = try sectionBody(payload)
        var index = body.startIndex
        while index + 4 <= body.endIndex {
            let program = UInt16(body[index]) << 8 | UInt16(body[index + 1])
            let pid = UInt16(body[index + 2] & 0x1F) << 8 | UInt16(body[index + 3])
            if program != 0 { return pid }
            index += 4
        }
        return nil
    }

    static func parsePMT(_ payload: ArraySlice<UInt8>) throws(MediaError) -> [(UInt16, UInt8)] {
        let body = try sectionBody(payload)
        guard body.count >= 4 else { throw .truncated("PMT") }
        let infoLength = Int(body[body.startIndex + 2] & 0x0F) << 8 | Int(body[body.startIndex + 3])
        var index = body.startIndex + 4 + infoLength
        var streams: [(UInt16, UInt8)] = []
        while index + 5 <= body.endIndex {
            let type = body[index]
            let pid = UInt16(body[index + 1] & 0x1F) << 8 | UInt16(body[index + 2])
            let esLength = Int(body[index + 3] & 0x0F) << 8 | Int(body[index + 4])
            streams.append((pid, type))
            index += 5 + esLength
        }
        return streams
    }

    /// The PID a PMT names as the PCR's.
    static func parsePCRPID(_ payload: ArraySlice<UInt8>) throws(MediaError) -> UInt16 {
        let body = try sectionBody(payload)
        guard body.count >= 2 else { throw .truncated("PMT") }
        return UInt16(body[body.startIndex] & 0x1F) << 8 | UInt16(body[body.startIndex + 1])
    }

    static func parsePES(_ data: [UInt8]) throws(MediaError) -> PES {
        guard data.count >= 9, data[0] == 0, data[1] == 0, data[2] == 1 else { throw .malformed("PES start code missing") }
        let flags = data[7]
        let headerLength = Int(data[8])
        guard 9 + headerLength <= data.count else { throw .truncated("PES header") }
        func timestamp(_ at: Int) -> Int64? {
            guard at + 5 <= 9 + headerLength else { return nil }
            let b = data[at..<(at + 5)].map(Int64.init)
            return (b[0] >> 1 & 0x07) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | b[4] >> 1
        }
        let pts = flags & 0x80 != 0 ? timestamp(9) : nil
        let dts = flags & 0x40 != 0 ? timestamp(14) : pts
        return PES(pid: 0, streamID: data[3], pts: pts, dts: dts, payload: Array(data[(9 + headerLength)...]), randomAccess: false, pcr: nil)
    }

    private static func videoTrack(pid: UInt16, _ pes: [PES]) throws(MediaError) -> MediaTrack {
        var sps: [[UInt8]] = [], pps: [[UInt8]] = []
        var samples: [MediaSample] = []
        for packet in pes {
            guard let dts = packet.dts, let pts = packet.pts else { continue }
            let units = NALUnit.splitAnnexB(packet.payload[...])
            var kept: [ArraySlice<UInt8>] = []
            var sync = false
            for unit in units {
                guard let header = unit.first else { continue }
                switch NALUnit.h264Type(header) {
                case 7: if sps.isEmpty { sps.append(Array(unit)) }
                case 8: if pps.isEmpty { pps.append(Array(unit)) }
                case 9: continue
                case 5: sync = true
                default: break
                }
                kept.append(unit)
            }
            guard !kept.isEmpty else { continue }
            samples.append(MediaSample(dts: dts, ctsOffset: Int32(clamping: pts - dts), duration: 0, isSync: sync,
                                       data: NALUnit.lengthPrefixed(kept)[...]))
        }
        fillDurations(&samples)
        let configuration = try AVCDecoderConfiguration(sps: sps, pps: pps)
        let size = try H264SPS(sps[0])
        return MediaTrack(id: UInt32(pid), codec: .h264, timescale: 90_000, width: size.width, height: size.height,
                          codecConfiguration: configuration.bytes, samples: samples)
    }

    private static func audioTrack(pid: UInt16, _ pes: [PES]) throws(MediaError) -> MediaTrack {
        var samples: [MediaSample] = []
        var config: AudioSpecificConfig?
        for packet in pes {
            guard let pts = packet.pts else { continue }
            var index = 0
            var frame = 0
            while index + 7 <= packet.payload.count {
                let header = try ADTSHeader(packet.payload[index...])
                guard index + header.frameLength <= packet.payload.count else { throw .truncated("ADTS frame") }
                config = config ?? header.config
                let rate = Int64(max(header.config.sampleRate, 1))
                samples.append(MediaSample(dts: pts + Int64(frame) * 1024 * 90_000 / rate, duration: UInt32(1024 * 90_000 / rate), isSync: true,
                                           data: Array(packet.payload[(index + header.headerLength)..<(index + header.frameLength)])[...]))
                index += header.frameLength
                frame += 1
            }
        }
        guard let config else { throw .malformed("AAC stream without ADTS frames") }
        return MediaTrack(id: UInt32(pid), codec: .aac, timescale: 90_000, sampleRate: config.sampleRate,
                          channelCount: Int(config.channelConfiguration), codecConfiguration: config.bytes, samples: samples)
    }

    private static func fillDurations(_ samples: inout [MediaSample]) {
        guard samples.count > 1 else {
            if !samples.isEmpty { samples[0].duration = 3600 }
            return
        }
        for index in 0..<(samples.count - 1) {
            samples[index].duration = UInt32(clamping: max(samples[index + 1].dts - samples[index].dts, 1))
        }
        samples[samples.count - 1].duration = samples[samples.count - 2].duration
    }
}
