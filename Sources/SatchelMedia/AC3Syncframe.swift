/// AC-3 and E-AC-3 syncframes (ETSI TS 102 366): where each frame of a buffer starts and how long it is, from its
/// sync word `0x0B77` and the size its header gives — `frmsizecod` and `fscod` for AC-3 (`bsid` up to 10), `frmsiz`
/// for E-AC-3 (`bsid` 11 to 16). Bounded: every frame is at least 8 bytes long and must lie whole in the buffer.
public enum AC3Syncframe {
    /// Nominal bit rates (kbit/s) by `frmsizecod / 2`.
    static let bitRates = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640]

    /// The length in bytes of the syncframe whose header starts `bytes` (at least 6 bytes of it).
    public static func length(of bytes: ArraySlice<UInt8>) throws(MediaError) -> Int {
        let at = bytes.startIndex
        guard bytes.count >= 6 else { throw .truncated("AC-3 syncframe header") }
        guard bytes[at] == 0x0B, bytes[at + 1] == 0x77 else { throw .malformed("AC-3: no sync word") }
        let bsid = Int(bytes[at + 5] >> 3)
        if bsid > 10 {
            guard bsid <= 16 else { throw .unsupported("AC-3 bitstream ID \(bsid)") }
            let frmsiz = (Int(bytes[at + 2] & 0x07) << 8) | Int(bytes[at + 3])
            return (frmsiz + 1) * 2
        }
        let fscod = Int(bytes[at + 4] >> 6), frmsizecod = Int(bytes[at + 4] & 0x3F)
        guard fscod < 3, frmsizecod / 2 < bitRates.count else { throw .malformed("AC-3: reserved sample rate or frame size code") }
        let rate = [48_000, 44_100, 32_000][fscod]
        // 16-bit words per frame: 1536 samples at the bit rate; 44.1 kHz frames of an odd code carry one more.
        let words = bitRates[frmsizecod / 2] * 1000 * 1536 / (rate * 16) + (fscod == 1 ? frmsizecod & 1 : 0)
        return words * 2
    }

    /// The syncframes of `bytes`, which must be whole frames back to back.
    public static func frames(in bytes: ArraySlice<UInt8>) throws(MediaError) -> [Range<Int>] {
        var frames: [Range<Int>] = []
        var at = bytes.startIndex
        while at < bytes.endIndex {
            let length = try Self.length(of: bytes[at..<bytes.endIndex])
            guard length >= 8, length <= bytes.endIndex - at else { throw .malformed("AC-3 syncframe at \(at - bytes.startIndex) runs past its data") }
            frames.append(at..<(at + length))
            at += length
        }
        return frames
    }
}
