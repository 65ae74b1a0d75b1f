/// PIFF 1.1 (the Protected Interoperable File Format of Smooth Streaming) from Common Encryption fragments: the
/// `senc` box of a fragment's `traf` becomes PIFF's sample encryption `uuid` box (the same contents), as
/// PlayReady's Smooth Streaming clients read it.
public enum PIFFFragment {
    /// PIFF's sample encryption box type (`uuid` A2394F52-5A9B-4F14-A244-6C427C648DF4).
    public static let sampleEncryptionUUID: [UInt8] = [0xA2, 0x39, 0x4F, 0x52, 0x5A, 0x9B, 0x4F, 0x14, 0xA2, 0x44, 0x6C, 0x42, 0x7C, 0x64, 0x8D, 0xF4]

    /// `bytes` (a `moof` with one `traf`, and whatever follows it: the `mdat`, or only its header) with its `senc` as PIFF's `uuid` box:
    /// 16 bytes longer, so `moof`, `traf` and the `trun`'s data offset grow by 16. A fragment without `senc` (clear)
    /// is given back as it is.
    public static func fromCENC(_ bytes: [UInt8]) throws(MediaError) -> [UInt8] {
        // Only the first box is read whole: what follows may be an 'mdat' header whose payload is elsewhere.
        let moof = try MP4Box.header(of: bytes, at: 0, end: bytes.count)
        guard moof.type == "moof", let traf = try moof.children(in: bytes).first("traf") else { throw .malformed("PIFF: no moof with a traf") }
        let children = try traf.children(in: bytes)
        guard let senc = children.first("senc") else { return bytes }
        guard let trun = children.first("trun"), bytes[trun.offset + 11] & 0x01 != 0 else { throw .malformed("PIFF: no trun with a data offset") }
        func grow(_ out: inout [UInt8], at offset: Int) throws(MediaError) {
            let value = out[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let (grown, overflow) = value.addingReportingOverflow(16)
            guard !overflow else { throw .malformed("PIFF: a box too large") }
            for index in 0..<4 { out[offset + index] = UInt8(truncatingIfNeeded: grown >> (24 - 8 * UInt32(index))) }
        }
        var out = Array(bytes[..<senc.offset])
        try grow(&out, at: moof.offset)
        try grow(&out, at: traf.offset)
        try grow(&out, at: trun.offset + 16)  // after its header, version/flags and sample count: the data offset
        let size = UInt32(senc.size + 16)
        out += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array("uuid".utf8)
        out += sampleEncryptionUUID
        out += bytes[(senc.offset + 8)...]
        return out
    }
}
