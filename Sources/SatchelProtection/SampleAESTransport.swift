import SatchelBytes
import SatchelMedia

/// Turns a SAMPLE-AES MPEG-TS segment into a clear one of the same container: every protected H.264 slice
/// and AAC frame is decrypted, the PMT declares the clear stream types (0x1B, 0x0F) without the SAMPLE-AES
/// descriptors, and each PES keeps its timestamps, random-access flag and PCR. Clear streams pass unchanged.
public enum SampleAESTransport {
    /// The clear segment. `iv` is the key tag's IV (SAMPLE-AES restarts it at every NAL and every frame).
    public static func decrypt(_ segment: [UInt8], key: SecretBytes, iv: [UInt8]) throws(ProtectionError) -> [UInt8] {
        let transform = try SampleAES(key: key, iv: iv)
        let streams: [(pid: UInt16, streamType: UInt8)]
        let packets: [TSDemuxer.PES]
        do { (streams, packets) = try TSDemuxer.packets(segment) } catch { throw .malformed("transport stream: \(error)") }
        var clearStreams: [TSStream] = []
        var kinds: [UInt16: UInt8] = [:]
        for (pid, type) in streams {
            let clearType: UInt8 = switch type {
            case 0xDB: 0x1B
            case 0xCF: 0x0F
            case 0xC1, 0xC2: throw ProtectionError.malformed("SAMPLE-AES AC-3 and E-AC-3 are not supported")
            default: type
            }
            guard let first = packets.first(where: { $0.pid == pid }) else { continue }
            clearStreams.append(TSStream(pid: pid, streamID: first.streamID, streamType: clearType))
            kinds[pid] = type
        }
        guard !clearStreams.isEmpty else { throw .malformed("the transport stream declares no elementary stream") }
        var muxer = TSMuxer(streams: clearStreams)
        var out = muxer.tables()
        out.reserveCapacity(segment.count + segment.count / 16)
        for pes in packets {
            guard let stream = clearStreams.first(where: { $0.pid == pes.pid }), let pts = pes.pts else {
                throw ProtectionError.malformed("a PES packet of PID \(pes.pid) has no timestamp")
            }
            let payload: [UInt8] = switch kinds[pes.pid] {
            case 0xDB: try video(pes.payload, transform)
            case 0xCF: try audio(pes.payload, transform)
            default: pes.payload
            }
            muxer.pes(stream, pts: pts, dts: pes.dts, payload: payload, pcr: pes.pcr, randomAccess: pes.randomAccess, into: &out)
        }
        return out
    }

    /// Decrypts each NAL of an Annex B access unit; start codes and every byte between NALs stay as they are.
    static func video(_ payload: [UInt8], _ transform: SampleAES) throws(ProtectionError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count)
        var copied = 0
        for unit in NALUnit.splitAnnexB(payload[...]) {
            out += payload[copied..<unit.startIndex]
            out += try transform.decryptVideoNAL(unit)
            copied = unit.endIndex
        }
        out += payload[copied...]
        return out
    }

    /// Decrypts each ADTS frame of a PES payload.
    static func audio(_ payload: [UInt8], _ transform: SampleAES) throws(ProtectionError) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.count)
        var index = 0
        while index < payload.count {
            let header: ADTSHeader
            do { header = try ADTSHeader(payload[index...]) } catch { throw .malformed("ADTS frame at \(index): \(error)") }
            guard header.frameLength <= payload.count - index else { throw .malformed("ADTS frame at \(index) runs past its PES packet") }
            out += try transform.decryptAudioFrame(Array(payload[index..<(index + header.frameLength)]), headerLength: header.headerLength)
            index += header.frameLength
        }
        return out
    }
}
