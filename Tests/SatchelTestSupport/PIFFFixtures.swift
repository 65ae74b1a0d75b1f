import Foundation
import SatchelMedia

/// Protected Smooth Streaming made in tests: PIFF sample encryption boxes and PlayReady Header Objects.
public enum PIFFFixtures {
    /// PIFF's sample encryption box type (`uuid` A2394F52-5A9B-4F14-A244-6C427C648DF4).
    public static let sampleEncryptionUUID: [UInt8] = [0xA2, 0x39, 0x4F, 0x52, 0x5A, 0x9B, 0x4F, 0x14, 0xA2, 0x44, 0x6C, 0x42, 0x7C, 0x64, 0x8D, 0xF4]

    /// `segment` (one 'moof' with one 'traf') with its 'senc' box turned into PIFF's sample encryption 'uuid' box:
    /// 16 bytes longer, so 'moof', 'traf' and the 'trun' data offset grow by 16.
    public static func piff(_ segment: [UInt8]) throws -> [UInt8] {
        let top = try MP4Box.children(of: segment, in: 0..<segment.count)
        guard let moof = top.first("moof"), let traf = try moof.children(in: segment).first("traf") else {
            throw TestMedia.ToolError(message: "no moof/traf to turn into PIFF")
        }
        let children = try traf.children(in: segment)
        guard let senc = children.first("senc"), let trun = children.first("trun") else { throw TestMedia.ToolError(message: "no senc/trun to turn into PIFF") }
        func grow(_ bytes: inout [UInt8], at offset: Int) {
            let value = bytes[offset..<(offset + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } + 16
            for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(index))) }
        }
        var out = Array(segment[..<senc.offset])
        grow(&out, at: moof.offset)
        grow(&out, at: traf.offset)
        grow(&out, at: trun.offset + 16)  // version/flags, sample count, then the data offset (flag 0x1)
        let size = UInt32(senc.size + 16)
        out += [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array("uuid".utf8)
        out += sampleEncryptionUUID
        out += segment[(senc.offset + 8)...]
        return out
    }

    /// A PlayReady Header Object naming the 16-byte `keyID` the way WRMHEADER `version` does
    /// (`<KID>` for 4.0, `KID VALUE=` for 4.1 and later), base64.
    public static func playReadyHeader(_ keyID: [UInt8], version: String) -> String {
        let b = keyID
        let guid = Data([b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6]] + b[8...]).base64EncodedString()
        let kid = version == "4.0.0.0" ? "<KID>\(guid)</KID>" : "<PROTECTINFO><KIDS><KID ALGID=\"AESCTR\" VALUE=\"\(guid)\"></KID></KIDS></PROTECTINFO>"
        let xml = "<WRMHEADER xmlns=\"http://schemas.microsoft.com/DRM/2007/03/PlayReadyHeader\" version=\"\(version)\"><DATA>\(kid)</DATA></WRMHEADER>"
        let record = xml.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        let total = 6 + 4 + record.count
        let object = [UInt8(total & 0xFF), UInt8(total >> 8 & 0xFF), UInt8(total >> 16 & 0xFF), 0] + le16(1) + le16(1) + le16(record.count) + record
        return Data(object).base64EncodedString()
    }
}
