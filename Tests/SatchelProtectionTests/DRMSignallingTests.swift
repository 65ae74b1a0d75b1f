import Foundation
import SatchelBytes
import SatchelMedia
import Testing
@testable import SatchelProtection

/// The DRM systems' signalling data as values: system IDs, Widevine's protobuf, PlayReady's header object and the
/// `pssh` boxes that carry them. The expected bytes are Shaka Packager v3.8's output for the same key (key ID
/// 00112233445566778899aabbccddeeff, key 000102030405060708090a0b0c0d0e0f); `MultiDRMPackageTests` compares with a
/// live Shaka run and an independent reader.
@Suite struct DRMSignallingTests {
    static let kid = (try? KeyID(hex: "00112233445566778899aabbccddeeff")) ?? KeyID.random()
    static let key = SecretBytes(Array(0...15))

    @Test("the systems: IDs as UUIDs and DASH scheme URIs, HLS KEYFORMATs, known from a pssh system ID or a KEYFORMAT (none written is identity), others unknown; the packagers' order")
    func systems() {
        #expect(DRMSystem.widevine.uuid == "edef8ba9-79d6-4ace-a3c8-27dcd51d21ed" && DRMSystem.playReady.uuid == "9a04f079-9840-4286-ab92-e65be0885f95")
        #expect(DRMSystem.clearKey.dashSchemeIDURI == "urn:uuid:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b"
                && DRMSystem.fairPlay.dashSchemeIDURI == "urn:uuid:94ce86fb-07ff-4f43-adb8-93d2fa968ca2")
        #expect(DRMSystem.widevine.hlsKeyFormat == "urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed" && DRMSystem.playReady.hlsKeyFormat == "com.microsoft.playready")
        for system in DRMSystem.allCases {
            #expect(DRMSystem(systemID: system.systemID) == system && DRMSystem(hlsKeyFormat: system.hlsKeyFormat) == system)
        }
        #expect(DRMSystem(hlsKeyFormat: nil) == .clearKey && DRMSystem(hlsKeyFormat: "COM.APPLE.STREAMINGKEYDELIVERY") == .fairPlay)
        #expect(DRMSystem(hlsKeyFormat: "com.example.other") == nil && DRMSystem(systemID: Array(repeating: 0, count: 16)) == nil)
        #expect(DRMSystem.allCases.sorted() == [.clearKey, .playReady, .widevine, .fairPlay])
    }

    @Test("Widevine's pssh data: key IDs, provider, content ID and scheme in field order, as Shaka writes it; read back; unknown fields skipped")
    func widevine() throws {
        let cbcs = WidevinePSSHData(keyIDs: [Self.kid], protectionScheme: "cbcs")
        #expect(Hex.encode(cbcs.encoded) == "121000112233445566778899aabbccddeeff48f3c6899b06")
        #expect(Data(cbcs.box).base64EncodedString() == "AAAAOHBzc2gAAAAA7e+LqXnWSs6jyCfc1R0h7QAAABgSEAARIjNEVWZ3iJmqu8zd7v9I88aJmwY=")
        #expect(Hex.encode(WidevinePSSHData(keyIDs: [Self.kid], protectionScheme: "cenc").encoded) == "121000112233445566778899aabbccddeeff48e3dc959b06")
        let full = WidevinePSSHData(keyIDs: [Self.kid, KeyID.random()], provider: "satchel", contentID: Array("movie-42".utf8), protectionScheme: "cenc")
        #expect(try WidevinePSSHData(decoding: full.encoded) == full)
        let parsed = try PSSH.parse(full.box)
        #expect(parsed.systemID == DRMSystem.widevine.systemID && parsed.keyIDs.isEmpty && parsed.data == full.encoded, "version 0: no KID list in the box")
        // An algorithm (1, varint), a policy (6, string) and a fixed32 field (10) are read past.
        let withUnknown: [UInt8] = [0x08, 0x01] + cbcs.encoded + [0x32, 0x02, 0x61, 0x62, 0x55, 1, 2, 3, 4]
        #expect(try WidevinePSSHData(decoding: withUnknown) == cbcs)
        // A scheme that is not four printable characters is no scheme.
        #expect(try WidevinePSSHData(decoding: [0x48, 0x01]).protectionScheme == nil)
    }

    @Test("hostile Widevine pssh data is a typed error: a number cut short or longer than 64 bits, a field longer than the data, a key ID of the wrong size, a group wire type, more than 64 KiB")
    func widevineHostile() {
        for (label, bytes) in [("cut number", [0x48, 0x80]), ("long number", [0x48] + [UInt8](repeating: 0xff, count: 11)),
                               ("long field", [0x12, 0x7f, 0x00]), ("short key ID", [0x12, 0x02, 0x00, 0x01]), ("group", [0x13]),
                               ("huge", [0x22] + [UInt8](repeating: 0, count: 70_000))] as [(String, [UInt8])] {
            #expect(throws: ProtectionError.self, "\(label)") { try WidevinePSSHData(decoding: bytes) }
        }
    }

    @Test("PlayReady's header object: cenc is a 4.0 header with KEYLEN, AESCTR, the key ID as a GUID and its checksum (Shaka's bytes); cbcs a 4.3 header with AESCBC and no checksum; LA_URL escaped; the key IDs read back; a license URL too long is refused")
    func playReady() throws {
        let cenc = try PlayReadyHeader.object(keyID: Self.kid, key: Self.key, scheme: .cenc)
        let xml = String(decoding: stride(from: 10, to: cenc.count - 1, by: 2).map { UInt16(cenc[$0]) | UInt16(cenc[$0 + 1]) << 8 }, as: UTF16.self)
        #expect(xml == #"<WRMHEADER xmlns="http://schemas.microsoft.com/DRM/2007/03/PlayReadyHeader" version="4.0.0.0"><DATA><PROTECTINFO><KEYLEN>16</KEYLEN><ALGID>AESCTR</ALGID></PROTECTINFO><KID>MyIRAFVEd2aImaq7zN3u/w==</KID><CHECKSUM>KpOvXRLUXfs=</CHECKSUM></DATA></WRMHEADER>"#)
        let total = cenc.count, record = cenc.count - 10
        let header: [UInt8] = [UInt8(total & 0xff), UInt8(total >> 8), 0, 0, 1, 0, 1, 0, UInt8(record & 0xff), UInt8(record >> 8)]
        #expect(Array(cenc[0..<10]) == header, "length, one record of type 1, its length (little-endian)")
        #expect(PlayReadyHeader.keyIDs(object: cenc) == [Self.kid])

        let cbcs = try PlayReadyHeader.object(keyID: Self.kid, key: Self.key, scheme: .cbcs, licenseURL: "https://pr.example/a?b=1&c=\"2\"")
        let cbcsXML = String(decoding: stride(from: 10, to: cbcs.count - 1, by: 2).map { UInt16(cbcs[$0]) | UInt16(cbcs[$0 + 1]) << 8 }, as: UTF16.self)
        #expect(cbcsXML.contains(#"version="4.3.0.0""#) && cbcsXML.contains(#"<KIDS><KID ALGID="AESCBC" VALUE="MyIRAFVEd2aImaq7zN3u/w=="></KID></KIDS>"#)
                && !cbcsXML.contains("CHECKSUM"))
        #expect(cbcsXML.contains("</PROTECTINFO><LA_URL>https://pr.example/a?b=1&amp;c=&quot;2&quot;</LA_URL></DATA>"), "\(cbcsXML)")
        #expect(PlayReadyHeader.keyIDs(object: cbcs) == [Self.kid])
        let box = try PSSH.parse(PlayReadyHeader.box(object: cbcs))
        #expect(box.systemID == DRMSystem.playReady.systemID && box.keyIDs.isEmpty && box.data == cbcs)
        #expect(throws: ProtectionError.self) {
            try PlayReadyHeader.object(keyID: Self.kid, key: Self.key, scheme: .cenc, licenseURL: "https://a/" + String(repeating: "x", count: 3000))
        }
    }

    @Test("pssh boxes: version 1 lists the key IDs, version 0 does not; both read back")
    func psshVersions() throws {
        let one = try PSSH.parse(PSSH.box(keyIDs: [Self.kid], data: [1, 2]))
        #expect(one.keyIDs == [Self.kid] && one.data == [1, 2] && one.systemID == PSSH.commonSystemID)
        let zero = PSSH.box(keyIDs: [Self.kid], data: [1, 2], version: 0)
        #expect(zero.count == 32 + 2 && zero[8] == 0)
        let parsed = try PSSH.parse(zero)
        #expect(parsed.keyIDs.isEmpty && parsed.data == [1, 2])
    }

    @Test("an MPD carries PlayReady's mspr:pro beside its pssh: written with the mspr namespace declared, read back; none declared without it")
    func playReadyInMPD() throws {
        let object = try PlayReadyHeader.object(keyID: Self.kid, key: Self.key, scheme: .cbcs)
        let protection = DASHContentProtection(schemeIDURI: DRMSystem.playReady.dashSchemeIDURI, value: "MSPR 2.0",
                                               pssh: Data(PlayReadyHeader.box(object: object)).base64EncodedString(),
                                               playReadyObject: Data(object).base64EncodedString())
        let set = DASHAdaptationSet(contentType: "video", mimeType: "video/mp4", contentProtection: [protection], representations: [])
        let text = DASHManifest(duration: 4, adaptationSets: [set]).text
        #expect(text.contains(#"xmlns:mspr="urn:microsoft:playready""#) && text.contains("<mspr:pro>"))
        let read = try DASHManifest(parsing: text).periods.first?.adaptationSets.first?.contentProtection.first
        #expect(read == protection, "\(String(describing: read))")
        let plain = DASHManifest(duration: 4, adaptationSets: [DASHAdaptationSet(contentType: "video", mimeType: "video/mp4", representations: [])]).text
        #expect(!plain.contains("mspr"))
    }
}
