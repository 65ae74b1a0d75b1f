import Foundation
import SatchelMedia

/// Protected Smooth Streaming made in tests: PIFF sample encryption boxes and PlayReady Header Objects.
public enum PIFFFixtures {
    /// PIFF's sample encryption box type (`uuid` A2394F52-5A9B-4F14-A244-6C427C648DF4).
    public static let sampleEncryptionUUID = PIFFFragment.sampleEncryptionUUID

    /// `segment` (one 'moof' with one 'traf', and what follows it) with its 'senc' box turned into PIFF's sample
    /// encryption 'uuid' box (``PIFFFragment/fromCENC(_:)``).
    public static func piff(_ segment: [UInt8]) throws -> [UInt8] {
        try PIFFFragment.fromCENC(segment)
    }

    /// PIFF's track encryption box type (`uuid` 8974DBCE-7BE7-4C51-84F9-7148F9882554).
    public static let trackEncryptionUUID: [UInt8] = [0x89, 0x74, 0xDB, 0xCE, 0x7B, 0xE7, 0x4C, 0x51, 0x84, 0xF9, 0x71, 0x48, 0xF9, 0x88, 0x25, 0x54]

    /// A CENC `cenc` fragmented MP4 file (its `moov`, then fragments of one `traf` each) as a PIFF 1.1 `.ismv` writes it:
    /// the scheme `piff`, `tenc` as PIFF's track encryption box, each fragment's `senc` as PIFF's sample encryption box.
    public static func piffFile(_ file: [UInt8]) throws -> [UInt8] {
        var out: [UInt8] = []
        for box in try MP4Box.children(of: file, in: 0..<file.count) {
            let bytes = Array(file[box.offset..<(box.offset + box.size)])
            switch box.type {
            case "moov": out += try piffMoov(bytes)
            case "moof": out += try piff(bytes)
            case "sidx": continue  // its sizes would be wrong
            default: out += bytes
            }
        }
        return out
    }

    /// A `moov` whose protected sample entries say PIFF: `schm` names `piff`, `schi` holds PIFF's track encryption
    /// box (AES-CTR, the `tenc`'s IV size and key ID) in place of `tenc`.
    static func piffMoov(_ moov: [UInt8]) throws -> [UInt8] {
        try MP4BoxEditor.rewrite(moov) { (box, path) throws(MediaError) -> MP4BoxEdit in
            switch (box.type, path.last) {
            case ("moov", nil), ("trak", "moov"), ("mdia", "trak"), ("minf", "mdia"), ("stbl", "minf"), ("sinf", "encv"), ("sinf", "enca"):
                return .descend(skip: 0, type: nil)
            case ("stsd", "stbl"): return .descend(skip: 8, type: nil)
            case ("encv", "stsd"): return .descend(skip: 78, type: nil)
            case ("enca", "stsd"): return .descend(skip: 28, type: nil)
            case ("schm", "sinf"):
                var payload = Array(moov[box.payload])
                payload.replaceSubrange(4..<8, with: Array("piff".utf8))
                return .payload(payload)
            case ("schi", "sinf"):
                guard let tenc = try box.children(in: moov).first("tenc") else { return .keep }
                let fields = Array(moov[tenc.payload])  // version and flags, two reserved bytes, isProtected, IV size, key ID
                guard fields.count >= 24 else { throw .truncated("'tenc'") }
                let body: [UInt8] = [0, 0, 0, 0] + [0, 0, 1] + [fields[7]] + Array(fields[8..<24])
                let size = UInt32(8 + 16 + body.count)
                return .payload([UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array("uuid".utf8)
                                + trackEncryptionUUID + body)
            default: return .keep
            }
        }
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
