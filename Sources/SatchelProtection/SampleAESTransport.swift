import SatchelBytes
import SatchelMedia

/// Turns a SAMPLE-AES MPEG-TS segment into a clear one of the same container: every protected H.264 slice
/// and AAC frame is decrypted, the PMT declares the clear stream types (0x1B, 0x0F) without the SAMPLE-AES
/// descriptors, and each PES keeps its timestamps, random-access flag and PCR. Clear streams pass unchanged.
///
/// It works as the segment arrives: ``clear(_:)`` takes the next piece of the stored segment and gives the clear
/// transport packets of every PES packet that piece completed (the PAT and PMT first), ``finish()`` the rest. Only
/// the PES packets not yet complete are held, so a segment streams out while it is read.
public struct SampleAESTransport: Sendable {
    private let transform: SampleAES
    private var reader = TSPESReader()
    private var muxer: TSMuxer?
    /// The stored stream type of each PID the clear PMT declares.
    private var kinds: [UInt16: UInt8] = [:]
    /// Where the clear packets' continuity counters start (the rendition's previous segment made clear).
    private let starting: TSContinuity
    /// Where the counters stand once the segment is through (``finish()``): the next segment goes on from here.
    public private(set) var continuity: TSContinuity

    /// A transformer for one segment; `iv` is the key tag's IV (SAMPLE-AES restarts it at every NAL and every frame);
    /// the clear packets' continuity counters go on from `continuity`.
    public init(key: SecretBytes, iv: [UInt8], continuity: TSContinuity = TSContinuity()) throws(ProtectionError) {
        transform = try SampleAES(key: key, iv: iv)
        starting = continuity
        self.continuity = continuity
    }

    /// The clear segment, all at once, and where its counters end.
    public static func decrypt(_ segment: [UInt8], key: SecretBytes, iv: [UInt8],
                               continuity: inout TSContinuity) throws(ProtectionError) -> [UInt8] {
        guard segment.count >= TSMuxer.packetSize else { throw .malformed("transport stream: MPEG-TS shorter than one packet") }
        var transport = try SampleAESTransport(key: key, iv: iv, continuity: continuity)
        var out = try transport.clear(segment[...])
        out += try transport.finish()
        continuity = transport.continuity
        return out
    }

    /// The clear segment, all at once (counters from zero).
    public static func decrypt(_ segment: [UInt8], key: SecretBytes, iv: [UInt8]) throws(ProtectionError) -> [UInt8] {
        var continuity = TSContinuity()
        return try decrypt(segment, key: key, iv: iv, continuity: &continuity)
    }

    /// The clear bytes of every PES packet that `piece` (the next bytes of the stored segment) completes.
    public mutating func clear(_ piece: ArraySlice<UInt8>) throws(ProtectionError) -> [UInt8] {
        let packets: [TSDemuxer.PES]
        do { packets = try reader.read(piece) } catch { throw .malformed("transport stream: \(error)") }
        return try write(packets)
    }

    /// The clear bytes of the PES packets still open at the end of the segment.
    public mutating func finish() throws(ProtectionError) -> [UInt8] {
        let packets: [TSDemuxer.PES]
        do { packets = try reader.finish() } catch { throw .malformed("transport stream: \(error)") }
        var out = try write(packets)
        if muxer == nil { out += try start() }
        if let muxer { continuity = muxer.state }
        return out
    }

    /// The PAT and PMT of the clear streams, from the streams declared so far.
    private mutating func start() throws(ProtectionError) -> [UInt8] {
        var clearStreams: [TSStream] = []
        for (pid, type) in reader.streams {
            let clearType: UInt8 = switch type {
            case 0xDB: 0x1B
            case 0xCF: 0x0F
            case 0xC1, 0xC2: throw ProtectionError.malformed("SAMPLE-AES AC-3 and E-AC-3 are not supported")
            default: type
            }
            clearStreams.append(TSStream(pid: pid, streamID: 0, streamType: clearType))
            kinds[pid] = type
        }
        guard !clearStreams.isEmpty else { throw .malformed("the transport stream declares no elementary stream") }
        var muxer = TSMuxer(streams: clearStreams, continuity: starting)
        let tables = muxer.tables()
        self.muxer = muxer
        return tables
    }

    private mutating func write(_ packets: [TSDemuxer.PES]) throws(ProtectionError) -> [UInt8] {
        guard !packets.isEmpty else { return [] }
        var out = muxer == nil ? try start() : []
        guard var muxer else { return out }
        self.muxer = nil  // the only copy while it writes (no copy of its counters on write)
        defer { self.muxer = muxer }
        for pes in packets {
            guard let stream = muxer.streams.first(where: { $0.pid == pes.pid }) else {
                throw .malformed("PID \(pes.pid) is declared after the segment's first media")
            }
            guard let pts = pes.pts else { throw .malformed("a PES packet of PID \(pes.pid) has no timestamp") }
            let payload: [UInt8] = switch kinds[pes.pid] {
            case 0xDB: try Self.video(pes.payload, transform)
            case 0xCF: try Self.audio(pes.payload, transform)
            default: pes.payload
            }
            var carried = stream
            carried.streamID = pes.streamID
            muxer.pes(carried, pts: pts, dts: pes.dts, payload: payload, pcr: pes.pcr, randomAccess: pes.randomAccess, into: &out)
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
