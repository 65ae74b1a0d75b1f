import SatchelBytes
import SatchelMedia

/// Turns a SAMPLE-AES MPEG-TS segment into a clear one of the same container: every protected H.264 slice,
/// AAC frame and AC-3 or E-AC-3 syncframe is decrypted, the PMT declares the clear stream types (0x1B, 0x0F, 0x81,
/// 0x87) without the SAMPLE-AES descriptors, and each PES keeps its timestamps, random-access flag and PCR. Clear streams pass unchanged.
///
/// It works as the segment arrives: ``clear(_:)`` takes the next piece of the stored segment and gives the clear
/// transport packets of every PES packet that piece completed (the PAT and PMT first), ``finish()`` the rest. Only
/// the PES packets not yet complete are held, so a segment streams out while it is read. A slice or frame is
/// decrypted where it lies and the stored transport packets go on (`TSPESEditor`); only a PES packet whose clear
/// length differs (a slice whose protected form holds emulation prevention bytes) is packetized again.
public struct SampleAESTransport: Sendable {
    private let transform: SampleAES
    private var editor: TSPESEditor

    /// Where the counters stand once the segment is through (``finish()``): the next segment goes on from here.
    public var continuity: TSContinuity { editor.continuity }
    /// How many PES packets were packetized again rather than made clear where they lie.
    public var remadeCount: Int { editor.remadeCount }

    /// A transformer for one segment; `iv` is the key tag's IV (SAMPLE-AES restarts it at every NAL and every frame);
    /// the clear packets' continuity counters go on from `continuity`.
    public init(key: SecretBytes, iv: [UInt8], continuity: TSContinuity = TSContinuity()) throws(ProtectionError) {
        transform = try SampleAES(key: key, iv: iv)
        editor = TSPESEditor(continuity: continuity, retype: Self.clearType)
    }

    /// The clear segment, all at once, and where its counters end.
    public static func decrypt(_ segment: [UInt8], key: SecretBytes, iv: [UInt8],
                               continuity: inout TSContinuity) throws(ProtectionError) -> [UInt8] {
        guard segment.count >= TSMuxer.packetSize else { throw .malformed("transport stream: MPEG-TS shorter than one packet") }
        var transport = try SampleAESTransport(key: key, iv: iv, continuity: continuity)
        var edited = segment
        var out: [UInt8] = []
        out.reserveCapacity(segment.count)
        let failure: ProtectionError? = edited.withUnsafeMutableBytes { bytes in
            do throws(ProtectionError) {
                for part in try transport.clear(segment: bytes) {
                    switch part {
                    case let .stored(range): out.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[range]))
                    case let .made(made): out += made
                    }
                }
                return nil
            } catch { return error }
        }
        if let failure { throw failure }
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
        var out: [UInt8] = []
        try clear(piece) { out.append(contentsOf: $0) }
        return out
    }

    /// The same, handed to `sink` in stretches as they lie in memory (no copy made for them first).
    public mutating func clear(_ piece: ArraySlice<UInt8>, into sink: (UnsafeRawBufferPointer) -> Void) throws(ProtectionError) {
        let transform = transform
        do {
            try editor.read(piece, edit: { (bytes: inout [UInt8], payload: Range<Int>, type: UInt8) throws(MediaError) -> TSPayloadEdit in
                try Self.edit(&bytes, payload, type, transform)
            }, into: sink)
        } catch { throw .malformed("transport stream: \(error)") }
    }

    /// A whole stored segment made clear where it lies (`segment` is written into): the stretches that make the clear
    /// segment, in order — mostly ranges of `segment` itself, so that nothing is copied to send it.
    public mutating func clear(segment: UnsafeMutableRawBufferPointer) throws(ProtectionError) -> [TSSegmentPart] {
        let transform = transform
        do {
            return try editor.edit(segment: segment) { (bytes: inout [UInt8], payload: Range<Int>, type: UInt8) throws(MediaError) -> TSPayloadEdit in
                try Self.edit(&bytes, payload, type, transform)
            }
        } catch { throw .malformed("transport stream: \(error)") }
    }

    /// The clear bytes of the PES packets still open at the end of the segment.
    public mutating func finish() throws(ProtectionError) -> [UInt8] {
        var out: [UInt8] = []
        try finish { out.append(contentsOf: $0) }
        return out
    }

    /// The same, handed to `sink`.
    public mutating func finish(into sink: (UnsafeRawBufferPointer) -> Void) throws(ProtectionError) {
        let transform = transform
        do {
            try editor.finish(edit: { (bytes: inout [UInt8], payload: Range<Int>, type: UInt8) throws(MediaError) -> TSPayloadEdit in
                try Self.edit(&bytes, payload, type, transform)
            }, into: sink)
        } catch { throw .malformed("transport stream: \(error)") }
    }

    /// The clear stream type of a stored one.
    @Sendable static func clearType(_ type: UInt8) throws(MediaError) -> UInt8 {
        switch type {
        case 0xDB: 0x1B
        case 0xCF: 0x0F
        case 0xC1: 0x81
        case 0xC2: 0x87
        default: type
        }
    }

    private static func edit(_ bytes: inout [UInt8], _ payload: Range<Int>, _ type: UInt8, _ transform: SampleAES) throws(MediaError) -> TSPayloadEdit {
        do {
            switch type {
            case 0xDB: return try video(&bytes, payload, transform)
            case 0xCF: return .changed(try audio(&bytes, payload, transform))
            case 0xC1, 0xC2: return .changed(try dolby(&bytes, payload, transform))
            default: return .changed([])
            }
        } catch { throw .malformed("\(error)") }
    }

    /// Decrypts each NAL of an Annex B access unit where it lies; start codes and every byte between NALs stay as they
    /// are. A NAL holding emulation prevention bytes is made anew, and with it the payload.
    static func video(_ bytes: inout [UInt8], _ payload: Range<Int>, _ transform: SampleAES) throws(ProtectionError) -> TSPayloadEdit {
        var changed: [Range<Int>] = []
        var remade: [(nal: Range<Int>, clear: [UInt8])] = []
        for (nal, escaped) in NALUnit.annexBUnits(bytes[payload]) {
            if let blocks = try transform.decryptVideoNAL(in: &bytes, at: nal, escaped: escaped) {
                for index in 0..<blocks.count {
                    let start = blocks.first + index * 160
                    changed.append(start..<(start + 16))
                }
            } else {
                remade.append((nal, try transform.decryptVideoNAL(bytes[nal])))
            }
        }
        guard !remade.isEmpty else { return .changed(changed) }
        var out: [UInt8] = []
        out.reserveCapacity(payload.count)
        var copied = payload.lowerBound
        for (nal, clear) in remade {
            out += bytes[copied..<nal.lowerBound]
            out += clear
            copied = nal.upperBound
        }
        out += bytes[copied..<payload.upperBound]
        return .remade(out)
    }

    /// Decrypts each AC-3 or E-AC-3 syncframe of a PES payload where it lies.
    static func dolby(_ bytes: inout [UInt8], _ payload: Range<Int>, _ transform: SampleAES) throws(ProtectionError) -> [Range<Int>] {
        let frames: [Range<Int>]
        do { frames = try AC3Syncframe.frames(in: bytes[payload]) } catch { throw .malformed("\(error)") }
        var changed: [Range<Int>] = []
        for frame in frames { changed.append(try transform.decryptAudioFrame(in: &bytes, at: frame, headerLength: 0)) }
        return changed
    }

    /// Decrypts each ADTS frame of a PES payload where it lies.
    static func audio(_ bytes: inout [UInt8], _ payload: Range<Int>, _ transform: SampleAES) throws(ProtectionError) -> [Range<Int>] {
        var changed: [Range<Int>] = []
        var index = payload.lowerBound
        while index < payload.upperBound {
            let header: ADTSHeader
            do { header = try ADTSHeader(bytes[index..<payload.upperBound]) } catch {
                throw .malformed("ADTS frame at \(index - payload.lowerBound): \(error)")
            }
            guard header.frameLength <= payload.upperBound - index else {
                throw .malformed("ADTS frame at \(index - payload.lowerBound) runs past its PES packet")
            }
            changed.append(try transform.decryptAudioFrame(in: &bytes, at: index..<(index + header.frameLength), headerLength: header.headerLength))
            index += header.frameLength
        }
        return changed
    }
}
