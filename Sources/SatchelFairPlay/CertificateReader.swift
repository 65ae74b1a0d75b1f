import SatchelBytes

/// Reads just enough of an X.509 certificate (DER) to find its SubjectPublicKeyInfo.
package enum CertificateReader {
    /// The DER bytes of the certificate's SubjectPublicKeyInfo.
    package static func subjectPublicKeyInfo(_ der: [UInt8]) throws(FairPlayError) -> [UInt8] {
        do {
            var outer = ByteReader(der)
            var certificate = ByteReader(try readElement(&outer, expecting: 0x30).content)
            var tbs = ByteReader(try readElement(&certificate, expecting: 0x30).content)
            if try tbs.peekBytes(1) == [0xA0] { _ = try readElement(&tbs, expecting: 0xA0) }  // version
            _ = try readElement(&tbs, expecting: 0x02)  // serialNumber
            for _ in 0..<4 { _ = try readElement(&tbs, expecting: 0x30) }  // signature, issuer, validity, subject
            return try readElement(&tbs, expecting: 0x30).whole
        } catch let error as FairPlayError {
            throw error
        } catch {
            throw .invalidCertificate("not a DER X.509 certificate")
        }
    }

    private static func readElement(_ reader: inout ByteReader, expecting tag: UInt8) throws -> (content: [UInt8], whole: [UInt8]) {
        let start = reader.offset
        let found = try reader.readUInt8()
        guard found == tag else { throw FairPlayError.invalidCertificate("unexpected DER tag \(found) at offset \(start)") }
        let first = try reader.readUInt8()
        var length = Int(first)
        if first & 0x80 != 0 {
            let count = Int(first & 0x7f)
            guard (1...4).contains(count) else { throw FairPlayError.invalidCertificate("bad DER length at offset \(start)") }
            length = Int(try reader.readInteger(byteCount: count))
        }
        let content = try reader.readBytes(length)
        return (content, Array(reader.bytes[start..<reader.offset]))
    }
}
