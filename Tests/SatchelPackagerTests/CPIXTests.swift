import Foundation
import SatchelBytes
import SatchelProtection
import SatchelTestSupport
import Testing
@testable import SatchelPackager

/// CPIX documents as values: written and read back in the clear and encrypted for a recipient, and every way a
/// document can be wrong refused with `invalid-cpix` (CLI and independent checks: `CPIXCommandTests`).
@Suite struct CPIXTests {
    /// A recipient's certificate and private key (RSA 2048, made with openssl).
    static func recipient(_ name: String) async throws -> (certificate: [UInt8], privateKey: String) {
        try TestMedia.require("openssl")
        let folder = try TestMedia.temporaryDirectory("cpix-\(name)")
        let key = folder.appendingPathComponent("key.pem").path, certificate = folder.appendingPathComponent("cert.pem").path
        _ = try await TestMedia.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
                                          "-subj", "/CN=\(name)", "-days", "2"])
        return (Array(try await TestMedia.contents(of: URL(fileURLWithPath: certificate))),
                String(decoding: try await TestMedia.contents(of: URL(fileURLWithPath: key)), as: UTF8.self))
    }

    static func document(keys count: Int = 2) throws -> CPIXDocument {
        let keys = try (0..<count).map { _ in CPIXDocument.Key(try ContentKey(keyID: KeyID.random(), key: SecretBytes.random(16), iv: SecureRandom.bytes(16))) }
        let first = keys[0].contentKey.keyID
        return CPIXDocument(contentID: "movie & co", keys: keys, systems: [
            CPIXDocument.System(keyID: first, systemID: DRMSystem.widevine.systemID,
                                pssh: WidevinePSSHData(keyIDs: [first], provider: "vendor", protectionScheme: "cbcs").box,
                                hlsMediaTag: #"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="data:text/plain;base64,AAAA",KEYFORMAT="urn:uuid:edef8ba9-79d6-4ace-a3c8-27dcd51d21ed""#),
            CPIXDocument.System(keyID: first, systemID: DRMSystem.fairPlay.systemID, hlsKeyURI: "skd://vendor/\(first.hex)"),
        ])
    }

    @Test("written and read back: keys, IVs, content ID and signalling, in the clear and encrypted for a recipient (no key in the clear then; the document and MAC keys fresh each time)")
    func roundTrip() async throws {
        let document = try Self.document()
        let (certificate, privateKey) = try await Self.recipient("round-trip")
        let clear = try document.xml()
        let encrypted = try document.xml(for: CPIXRecipient(certificate: certificate))
        for (label, xml, key) in [("clear", clear, nil), ("encrypted", encrypted, try CPIXPrivateKey(pem: privateKey))] {
            let read = try CPIXDocument(xml: xml, privateKey: key)
            #expect(read.contentID == "movie & co", "\(label)")
            #expect(read.keys.map(\.contentKey) == document.keys.map(\.contentKey) && read.keys.allSatisfy(\.explicitIV), "\(label)")
            #expect(read.systems == document.systems, "\(label)")
        }
        for key in document.keys {
            let plain = Data(key.contentKey.key.bytes).base64EncodedString()
            #expect(clear.contains(plain) && !encrypted.contains(plain), "the encrypted document holds no key in the clear")
        }
        #expect(try document.xml(for: CPIXRecipient(certificate: certificate)) != encrypted, "a fresh document key each time")
    }

    @Test("refused with invalid-cpix and a reason, never a key: not XML, another root, encrypted without the private key or with another's, a changed encrypted key (its MAC), a key in the clear beside encrypted ones, no MAC, a key ID twice, a 17-byte key, a bad explicitIV, a PSSH of another system, more keys than asked for")
    func refusals() async throws {
        let document = try Self.document()
        let (certificate, privateKey) = try await Self.recipient("refusals")
        let (_, otherKey) = try await Self.recipient("other")
        let encrypted = try document.xml(for: CPIXRecipient(certificate: certificate))
        let key = try CPIXPrivateKey(pem: privateKey)
        let clear = try document.xml()
        let first = document.keys[0].contentKey
        let plain = Data(first.key.bytes).base64EncodedString()
        // The first content key's encrypted value with one byte changed.
        let values = encrypted.components(separatedBy: "<pskc:EncryptedValue>").dropFirst().map { $0.components(separatedBy: "</pskc:EncryptedValue>")[0] }
        let contentValue = try #require(values.dropFirst().first.flatMap { $0.components(separatedBy: "<enc:CipherValue>").last?.components(separatedBy: "<").first })
        var changedBytes = try #require(Data(base64Encoded: contentValue))
        changedBytes[20] ^= 1
        // The first content key's encrypted value (with its MAC) replaced by the same key in the clear.
        let keyList = try #require(encrypted.range(of: "<cpix:ContentKeyList"))
        let firstSecret = try #require(encrypted.range(of: #"<pskc:Secret><pskc:EncryptedValue>(?:(?!</pskc:Secret>).)*</pskc:Secret>"#,
                                                       options: .regularExpression, range: keyList.lowerBound..<encrypted.endIndex))
        let mixed = encrypted.replacingCharacters(in: firstSecret, with: "<pskc:Secret><pskc:PlainValue>\(plain)</pskc:PlainValue></pskc:Secret>")
        let cases: [(String, String, CPIXPrivateKey?, String)] = [
            ("not XML", "<cpix:CPIX", nil, "not XML"),
            ("another root", "<MPD/>", nil, "not CPIX"),
            ("no private key", encrypted, nil, "give the recipient's private key"),
            ("another's key", encrypted, try CPIXPrivateKey(pem: otherKey), "does not open with this private key"),
            ("changed value", encrypted.replacingOccurrences(of: contentValue, with: changedBytes.base64EncodedString()), key, "MAC does not match"),
            ("a key in the clear beside encrypted ones", mixed, key, "a mixed document is refused"),
            ("no MAC", encrypted.replacingOccurrences(of: #"<pskc:ValueMAC>[^<]*</pskc:ValueMAC>"#, with: "", options: .regularExpression), key, "MAC does not match"),
            ("a key ID twice", clear.replacingOccurrences(of: document.keys[1].contentKey.keyID.uuidString, with: first.keyID.uuidString), nil, "listed twice"),
            ("17-byte key", clear.replacingOccurrences(of: plain, with: Data(first.key.bytes + [0]).base64EncodedString()), nil, "17 bytes"),
            ("bad IV", clear.replacingOccurrences(of: "explicitIV=\"\(Data(first.iv).base64EncodedString())\"", with: "explicitIV=\"AAAA\""), nil, "not 16"),
            ("another system's PSSH", clear.replacingOccurrences(of: "systemId=\"\(DRMSystem.widevine.uuid)\"", with: "systemId=\"\(DRMSystem.playReady.uuid)\""),
             nil, "not a pssh box of that system"),
        ]
        for (label, xml, privateKey, words) in cases {
            do {
                _ = try CPIXDocument(xml: xml, privateKey: privateKey)
                Issue.record("\(label): read")
            } catch {
                #expect(error.code == "invalid-cpix" && error.description.contains(words), "\(label): \(error)")
                #expect(!error.description.contains(plain), "\(label): the error quotes a key")
            }
        }
        var options = PackageOptions(inputs: ["in.mp4"], output: "out", format: .cmaf, scheme: .cbcs)
        #expect(throws: PackagerError.self) { try options.apply(document) }
        #expect(throws: PackagerError.self) { try options.apply(document, keyID: KeyID.random()) }
    }

    @Test("applied to a package: the chosen key and its IV, the document's pssh boxes and FairPlay key URI, the systems it lists (unless --drm says), unknown systems returned")
    func applied() throws {
        var document = try Self.document()
        let first = document.keys[0].contentKey
        document.systems.append(CPIXDocument.System(keyID: first.keyID, systemID: Array(repeating: 7, count: 16)))
        var options = PackageOptions(inputs: ["in.mp4"], output: "out", format: .cmaf, scheme: .cbcs)
        let unknown = try options.apply(document, keyID: first.keyID)
        #expect(unknown == [Array(repeating: 7, count: 16)])
        #expect(options.key == first && options.drm == [.widevine, .fairPlay] && options.fairPlayURI == "skd://vendor/\(first.keyID.hex)")
        #expect(options.psshBoxes[.widevine] == document.systems[0].pssh)
        let boxes = try DRMSignalling(options: options).psshBoxes(first)
        #expect(boxes == [document.systems[0].pssh], "the vendor's Widevine box, as given")
        var chosen = PackageOptions(inputs: ["in.mp4"], output: "out", format: .cmaf, scheme: .cbcs)
        chosen.drm = [.clearKey]
        try chosen.apply(document, keyID: first.keyID)
        #expect(chosen.drm == [.clearKey], "--drm has the last word")
    }

    @Test("the signalling kept with a key: each key's systems encoded and read back for that key; an export keeps them in place of its own for the same system and adds the rest; a CPIX 2.3 key's commonEncryptionScheme read, a wrong one refused")
    func keptSignalling() throws {
        let document = try Self.document()
        let (first, second) = (document.keys[0].contentKey, document.keys[1].contentKey)
        let kept = try #require(document.keptSignalling(of: first.keyID))
        #expect(document.keptSignalling(of: second.keyID) == nil, "the second key has no systems")
        #expect(try CPIXDocument.keptSystems(kept, keyID: first.keyID) == document.systems)
        #expect(throws: PackagerError.self) { try CPIXDocument.keptSystems("{not json", keyID: first.keyID) }

        var options = PackageOptions(inputs: ["-"], output: "-", format: .cmaf, scheme: .cbcs)
        options.drm = [.widevine, .clearKey]
        let own = try CPIXDocument.signalled([first, second], contentID: "movie", options: options)
        let merged = own.keeping(try CPIXDocument.keptSystems(kept, keyID: first.keyID))
        let widevine = merged.systems.filter { $0.keyID == first.keyID && $0.system == .widevine }
        #expect(widevine == [document.systems[0]], "the vendor's Widevine entry in place of Satchel's, once")
        #expect(merged.systems.contains(document.systems[1]), "FairPlay, which the export did not make, added")
        #expect(merged.systems.count == own.systems.count + 1)
        #expect(merged.systems.filter { $0.keyID == second.keyID } == own.systems.filter { $0.keyID == second.keyID }, "the other key's own signalling untouched")

        let xml = try document.xml()
        let marked = xml.replacingOccurrences(of: "<cpix:ContentKey kid=\"\(first.keyID.uuidString)\"", with: "<cpix:ContentKey commonEncryptionScheme=\"cenc\" kid=\"\(first.keyID.uuidString)\"")
        let read = try CPIXDocument(xml: marked)
        #expect(read.keys.map(\.scheme) == ["cenc", nil])
        #expect(throws: PackagerError.self) { try CPIXDocument(xml: marked.replacingOccurrences(of: "\"cenc\"", with: "\"ctr\"")) }
    }
}
