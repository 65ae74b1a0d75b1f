import Crypto
import Foundation
import SatchelBytes

extension PlayReadyHeader {
    /// The longest license URL a header carries (the header's record holds at most 64 KiB of UTF-16).
    public static let licenseURLLimit = 2048

    /// A PlayReady Object for one content key, as the PlayReady Header Specification lays it out: the object's length
    /// and record count, then one record of type 1 holding the WRMHEADER in UTF-16LE. `cenc` keys get a version 4.0
    /// header (`KEYLEN`, `ALGID` AESCTR, `KID` and its `CHECKSUM`: the first 8 bytes of the key ID, in GUID byte order,
    /// encrypted with the key by AES-ECB); `cbcs` keys a version 4.3 header (`KIDS` with `ALGID="AESCBC"`, which
    /// takes no checksum). `licenseURL` becomes `LA_URL` (XML-escaped). The key is used for the checksum alone.
    public static func object(keyID: KeyID, key: SecretBytes, scheme: CommonEncryption.Scheme, licenseURL: String? = nil) throws(ProtectionError) -> [UInt8] {
        if let licenseURL, licenseURL.count > licenseURLLimit {
            throw .invalidMessage("the PlayReady license URL is longer than \(licenseURLLimit) characters")
        }
        let guid = Data(guidBytes(keyID)).base64EncodedString()
        let laURL = licenseURL.map { "<LA_URL>\(escaped($0))</LA_URL>" } ?? ""
        let namespace = "http://schemas.microsoft.com/DRM/2007/03/PlayReadyHeader"
        let xml: String
        switch scheme {
        case .cenc:
            let checksum = try BlockCipher.cbcEncrypt(guidBytes(keyID), key: SymmetricKey(data: key.bytes), iv: [UInt8](repeating: 0, count: 16))
            xml = "<WRMHEADER xmlns=\"\(namespace)\" version=\"4.0.0.0\"><DATA><PROTECTINFO><KEYLEN>16</KEYLEN><ALGID>AESCTR</ALGID>"
                + "</PROTECTINFO><KID>\(guid)</KID><CHECKSUM>\(Data(checksum.prefix(8)).base64EncodedString())</CHECKSUM>\(laURL)</DATA></WRMHEADER>"
        case .cbcs:
            xml = "<WRMHEADER xmlns=\"\(namespace)\" version=\"4.3.0.0\"><DATA><PROTECTINFO><KIDS><KID ALGID=\"AESCBC\" VALUE=\"\(guid)\"></KID>"
                + "</KIDS></PROTECTINFO>\(laURL)</DATA></WRMHEADER>"
        }
        var record: [UInt8] = []
        for unit in xml.utf16 { record += [UInt8(truncatingIfNeeded: unit), UInt8(truncatingIfNeeded: unit >> 8)] }
        guard record.count <= Int(UInt16.max) else { throw .invalidMessage("the PlayReady header is too long") }
        func le16(_ value: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
        let total = 4 + 2 + 4 + record.count
        return [UInt8(truncatingIfNeeded: total), UInt8(truncatingIfNeeded: total >> 8), UInt8(truncatingIfNeeded: total >> 16), 0]
            + le16(1) + le16(1) + le16(record.count) + record
    }

    /// A `pssh` box (version 0, as Shaka Packager writes PlayReady's) holding `object`.
    public static func box(object: [UInt8]) -> [UInt8] {
        PSSH.box(systemID: DRMSystem.playReady.systemID, keyIDs: [], data: object, version: 0)
    }

    /// A key ID in the GUID byte order PlayReady writes: its first three fields little-endian.
    static func guidBytes(_ keyID: KeyID) -> [UInt8] { KeyID(guidOrder: keyID).bytes }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

extension KeyID {
    /// `other` with its first three fields' bytes reversed: a UUID in PlayReady's GUID byte order, or back.
    init(guidOrder other: KeyID) {
        let b = other.bytes
        self = (try? KeyID([b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6]] + b[8...])) ?? other
    }
}
