import Foundation
import SatchelBytes
import SatchelMedia
import SatchelTestSupport
import Testing

/// DASH-IF CPIX key exchange on the command line: `satchel keys export --cpix`, `keys import --cpix` and
/// `package --cpix`, checked against the CPIX schema (lxml, with the schema files of PyPI's `cpix` package) and by
/// an independent implementation of its encryption (Python's `cryptography`), both ways.
@Suite(.serialized) struct CPIXCommandTests {
    /// A folder with a short source, and a recipient's certificate and private key (RSA 2048, made with openssl).
    static func stage(_ name: String) async throws -> (folder: URL, input: URL, certificate: String, privateKey: String) {
        try TestMedia.require("ffmpeg")
        try TestMedia.require("openssl")
        let folder = try TestMedia.temporaryDirectory("cpix-\(name)")
        let certificate = folder.appendingPathComponent("vendor.pem").path, privateKey = folder.appendingPathComponent("vendor.key").path
        _ = try await TestMedia.run("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", privateKey, "-out", certificate,
                                          "-subj", "/CN=drm-vendor", "-days", "2"])
        return await (folder, try TestMedia.make("cpix", seconds: 4, size: "320x180"), certificate, privateKey)
    }

    static func python(_ script: String, _ arguments: [String]) throws -> [String: Any] {
        let python3 = try #require(TestMedia.which("python3"), "python3 is required")
        let result = try ProcessRunner.run(python3, ["-c", script] + arguments)
        #expect(result.status == 0, "\(result.stderr.suffix(1000))")
        return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stdout.prefix(300))")
    }

    /// Python helpers both scripts share: the schema, the namespaces, RSA-OAEP.
    static let common = #"""
        import base64, hashlib, hmac, importlib.util, json, os, sys
        from lxml import etree
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, padding as blockpadding, serialization
        from cryptography.hazmat.primitives.asymmetric import padding
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        SCHEMA = etree.XMLSchema(etree.parse(os.path.join(importlib.util.find_spec("cpix").submodule_search_locations[0], "schema", "cpix.xsd")))
        NS = {"cpix": "urn:dashif:org:cpix", "pskc": "urn:ietf:params:xml:ns:keyprov:pskc", "enc": "http://www.w3.org/2001/04/xmlenc#",
              "ds": "http://www.w3.org/2000/09/xmldsig#"}
        OAEP = padding.OAEP(mgf=padding.MGF1(hashes.SHA1()), algorithm=hashes.SHA1(), label=None)
        b64 = lambda text: base64.b64decode(text.strip())

        """#

    /// Validates a CPIX document and opens it as its recipient would: the document and MAC keys with the private
    /// key, each content key's MAC, then the key. Prints the keys (hex), the MAC checks, the signalling.
    static let opener = common + #"""
        document = etree.parse(sys.argv[1])
        private = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), None)
        out = {"valid": SCHEMA.validate(document), "errors": str(SCHEMA.error_log), "keys": {}, "systems": []}
        delivery = document.find("cpix:DeliveryDataList/cpix:DeliveryData", NS)
        out["certificate"] = delivery.findtext("cpix:DeliveryKey/ds:X509Data/ds:X509Certificate", namespaces=NS)
        document_key = private.decrypt(b64(delivery.findtext("cpix:DocumentKey/cpix:Data/pskc:Secret/pskc:EncryptedValue/enc:CipherData/enc:CipherValue", namespaces=NS)), OAEP)
        mac_key = private.decrypt(b64(delivery.findtext("cpix:MACMethod/pskc:MACKey/enc:CipherData/enc:CipherValue", namespaces=NS)), OAEP)
        out["algorithms"] = [delivery.find("cpix:DocumentKey", NS).get("Algorithm"), delivery.find("cpix:MACMethod", NS).get("Algorithm")]
        for element in document.findall("cpix:ContentKeyList/cpix:ContentKey", NS):
            secret = element.find("cpix:Data/pskc:Secret", NS)
            value = b64(secret.findtext("pskc:EncryptedValue/enc:CipherData/enc:CipherValue", namespaces=NS))
            mac_ok = hmac.compare_digest(hmac.new(mac_key, value, hashlib.sha512).digest(), b64(secret.findtext("pskc:ValueMAC", namespaces=NS)))
            decryptor = Cipher(algorithms.AES(document_key), modes.CBC(value[:16])).decryptor()
            unpadder = blockpadding.PKCS7(128).unpadder()
            key = unpadder.update(decryptor.update(value[16:]) + decryptor.finalize()) + unpadder.finalize()
            out["keys"][element.get("kid").replace("-", "")] = {"key": key.hex(), "mac_ok": mac_ok, "iv": b64(element.get("explicitIV")).hex(),
                                                                  "plain": secret.find("pskc:PlainValue", NS) is not None}
        for element in document.findall("cpix:DRMSystemList/cpix:DRMSystem", NS):
            entry = {"kid": element.get("kid").replace("-", ""), "system": element.get("systemId")}
            if element.find("cpix:PSSH", NS) is not None: entry["pssh"] = b64(element.findtext("cpix:PSSH", namespaces=NS)).hex()
            if element.find("cpix:URIExtXKey", NS) is not None: entry["uri"] = b64(element.findtext("cpix:URIExtXKey", namespaces=NS)).decode()
            for data in element.findall("cpix:HLSSignalingData", NS): entry[data.get("playlist")] = b64(data.text).decode()
            out["systems"].append(entry)
        print(json.dumps(out))
        """#

    /// The init segment's `pssh` boxes (hex), by system ID (hex).
    static func psshBoxes(_ file: URL) throws -> [String: String] {
        try MultiDRMPackageTests.psshBoxes(file).mapValues { $0.map { String(format: "%02x", $0) }.joined() }
    }

    @Test("keys export --cpix: a document valid against the DASH-IF CPIX schema, mode 0600, that Python opens with the recipient's private key (RSA-OAEP document and MAC keys, every MAC right) to the store's key and IV, with each system's pssh as the package has it and FairPlay's key URI and tags; imported back and packaged from, the same key and signalling; in the clear without --recipient")
    func exportOpensElsewhere() async throws {
        let (folder, input, certificate, privateKey) = try await Self.stage("export")
        try await TestMedia.offloaded { () throws -> Void in
            let data = folder.appendingPathComponent("data").path, keys = folder.appendingPathComponent("film.keys.json").path
            let drm = ["--drm", "clearkey,playready,widevine,fairplay", "--playready-license-url", "https://pr.example/rightsmanager.asmx"]
            let packaged = try CLIRunner.run(["package", input.path, "--out", folder.appendingPathComponent("film").path, "--format", "cmaf", "--scheme", "cbcs",
                                              "--register", "--asset-id", "film", "--data-dir", data, "--keys-out", keys] + drm)
            #expect(packaged.status == 0, "\(packaged.stderr)")
            let keyFile = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: keys))) as? [String: Any])
            let stored = try #require((keyFile["keys"] as? [[String: Any]])?.first)
            let kid = try #require(stored["keyId"] as? String)

            let document = folder.appendingPathComponent("film.cpix.xml").path
            let exported = try CLIRunner.run(["keys", "export", "--cpix", document, "--asset-id", "film", "--data-dir", data, "--recipient", certificate,
                                              "--scheme", "cbcs"] + drm)
            #expect(exported.status == 0 && exported.stdout.contains("encrypted for the recipient"), "\(exported.stderr)")
            let mode = (try FileManager.default.attributesOfItem(atPath: document)[.posixPermissions] as? Int) ?? 0
            #expect(mode == 0o600, "the document holds keys: \(String(mode, radix: 8))")
            let opened = try Self.python(Self.opener, [document, privateKey])
            #expect(opened["valid"] as? Bool == true, "\(opened["errors"] ?? "")")
            #expect(opened["algorithms"] as? [String] == ["http://www.w3.org/2001/04/xmlenc#aes256-cbc", "http://www.w3.org/2001/04/xmldsig-more#hmac-sha512"])
            let key = (opened["keys"] as? [String: [String: Any]])?[kid]
            #expect(key?["mac_ok"] as? Bool == true && key?["plain"] as? Bool == false)
            #expect(key?["key"] as? String == stored["key"] as? String && key?["iv"] as? String == stored["iv"] as? String,
                    "Python's decryption gives the store's key and IV")
            let systems = opened["systems"] as? [[String: Any]] ?? []
            let boxes = try Self.psshBoxes(folder.appendingPathComponent("film/video_0/init.mp4"))
            #expect(systems.count == 4 && systems.allSatisfy { $0["kid"] as? String == kid })
            for system in systems where system["pssh"] != nil {
                let id = (system["system"] as? String ?? "").replacingOccurrences(of: "-", with: "")
                #expect(boxes[id] == system["pssh"] as? String, "\(id): the document's pssh is the package's")
            }
            let fairPlay = systems.first { $0["system"] as? String == "94ce86fb-07ff-4f43-adb8-93d2fa968ca2" }
            #expect(fairPlay?["uri"] as? String == "skd://film" && (fairPlay?["media"] as? String)?.hasPrefix(#"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://film""#) == true
                    && (fairPlay?["master"] as? String)?.hasPrefix("#EXT-X-SESSION-KEY:") == true, "\(String(describing: fairPlay))")

            // Back in: imported into another store, and packaged from, with the recipient's private key.
            let imported = try CLIRunner.run(["keys", "import", "--cpix", document, "--private-key", privateKey, "--asset-id", "film-copy",
                                              "--data-dir", folder.appendingPathComponent("other").path])
            #expect(imported.status == 0 && imported.stdout.contains("imported 1 key for asset film-copy"), "\(imported.stderr)")
            let again = folder.appendingPathComponent("again")
            let repackaged = try CLIRunner.run(["package", input.path, "--out", again.path, "--format", "cmaf", "--scheme", "cbcs", "--cpix", document,
                                                "--private-key", privateKey])
            #expect(repackaged.status == 0 && repackaged.stdout.contains("for clearkey, playready, widevine, fairplay"), "\(repackaged.stderr)")
            #expect(try Self.psshBoxes(again.appendingPathComponent("video_0/init.mp4")) == boxes)
            let againKeys = try String(contentsOfFile: again.path + ".keys.json", encoding: .utf8)
            #expect(againKeys.contains(stored["key"] as? String ?? "-") && againKeys.contains(stored["iv"] as? String ?? "-"), "the document's key and IV")
            let media = try String(contentsOf: again.appendingPathComponent("video_0/index.m3u8"), encoding: .utf8)
            #expect(media.contains(#"URI="skd://film",KEYFORMAT="com.apple.streamingkeydelivery""#))

            // Without --recipient: in the clear, valid all the same.
            let clear = folder.appendingPathComponent("clear.xml").path
            #expect(try CLIRunner.run(["keys", "export", "--cpix", clear, "--asset-id", "film", "--data-dir", data]).status == 0)
            let text = try String(contentsOfFile: clear, encoding: .utf8)
            let plainKey = Data(try Hex.decode(stored["key"] as? String ?? "")).base64EncodedString()
            #expect(text.contains("<pskc:PlainValue>\(plainKey)</pskc:PlainValue>") && !text.contains("DeliveryData"))
            let check = try Self.python(Self.common + #"""
                print(json.dumps({"valid": SCHEMA.validate(etree.parse(sys.argv[1])), "errors": str(SCHEMA.error_log)}))
                """#, [clear])
            #expect(check["valid"] as? Bool == true, "\(check["errors"] ?? "")")
        }
    }

    /// Writes a CPIX document as a DRM vendor's key service would, from the specification and with Python's
    /// `cryptography` alone: the content key encrypted for the certificate, a Widevine pssh of the vendor's own
    /// (provider and content ID), FairPlay's key URI, and a system Satchel does not know (Marlin).
    static let vendor = common + #"""
        certificate = x509.load_pem_x509_certificate(open(sys.argv[2], "rb").read())
        kid, key, iv = bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4]), bytes.fromhex(sys.argv[5])
        document_key, mac_key = os.urandom(32), os.urandom(64)
        public = certificate.public_key()
        padder = blockpadding.PKCS7(128).padder()
        value_iv = os.urandom(16)
        encryptor = Cipher(algorithms.AES(document_key), modes.CBC(value_iv)).encryptor()
        value = value_iv + encryptor.update(padder.update(key) + padder.finalize()) + encryptor.finalize()
        mac = hmac.new(mac_key, value, hashlib.sha512).digest()
        def field(number, data): return bytes([number << 3 | 2, len(data)]) + data
        widevine_data = field(2, kid) + field(3, b"vendor-x") + field(4, b"film-7") + bytes([0x48]) + bytes([0xe3, 0xdc, 0x95, 0x9b, 0x06])
        widevine = (32 + len(widevine_data)).to_bytes(4, "big") + b"pssh" + bytes(4) + bytes.fromhex("edef8ba979d64acea3c827dcd51d21ed") \
            + len(widevine_data).to_bytes(4, "big") + widevine_data
        uuid = lambda raw: "%s-%s-%s-%s-%s" % (raw[0:4].hex(), raw[4:6].hex(), raw[6:8].hex(), raw[8:10].hex(), raw[10:16].hex())
        e = lambda data: base64.b64encode(data).decode()
        cipher = lambda data: '<enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p"/><enc:CipherData><enc:CipherValue>%s</enc:CipherValue></enc:CipherData>' % e(public.encrypt(data, OAEP))
        der = certificate.public_bytes(serialization.Encoding.DER)
        xml = f'''<?xml version="1.0" encoding="UTF-8"?>
        <CPIX xmlns="urn:dashif:org:cpix" xmlns:pskc="urn:ietf:params:xml:ns:keyprov:pskc" xmlns:enc="http://www.w3.org/2001/04/xmlenc#" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" contentId="film-7" name="vendor">
          <DeliveryDataList>
            <DeliveryData id="packager">
              <DeliveryKey><ds:X509Data><ds:X509Certificate>{e(der)}</ds:X509Certificate></ds:X509Data></DeliveryKey>
              <DocumentKey Algorithm="http://www.w3.org/2001/04/xmlenc#aes256-cbc">
                <Data><pskc:Secret><pskc:EncryptedValue>{cipher(document_key)}</pskc:EncryptedValue></pskc:Secret></Data>
              </DocumentKey>
              <MACMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#hmac-sha512"><pskc:MACKey>{cipher(mac_key)}</pskc:MACKey></MACMethod>
              <Description>keys for the packager</Description>
            </DeliveryData>
          </DeliveryDataList>
          <ContentKeyList>
            <ContentKey kid="{uuid(kid)}" explicitIV="{e(iv)}">
              <Data><pskc:Secret>
                <pskc:EncryptedValue><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes256-cbc"/><enc:CipherData><enc:CipherValue>{e(value)}</enc:CipherValue></enc:CipherData></pskc:EncryptedValue>
                <pskc:ValueMAC>{e(mac)}</pskc:ValueMAC>
              </pskc:Secret></Data>
            </ContentKey>
          </ContentKeyList>
          <DRMSystemList>
            <DRMSystem kid="{uuid(kid)}" systemId="edef8ba9-79d6-4ace-a3c8-27dcd51d21ed"><PSSH>{e(widevine)}</PSSH></DRMSystem>
            <DRMSystem kid="{uuid(kid)}" systemId="94ce86fb-07ff-4f43-adb8-93d2fa968ca2"><URIExtXKey>{e(b"skd://vendor/film-7")}</URIExtXKey></DRMSystem>
            <DRMSystem kid="{uuid(kid)}" systemId="5e629af5-38da-4063-8977-97ffbd9902d4"/>
          </DRMSystemList>
        </CPIX>
        '''
        open(sys.argv[1], "w").write(xml)
        print(json.dumps({"valid": SCHEMA.validate(etree.fromstring(xml.encode())), "errors": str(SCHEMA.error_log), "widevine": widevine.hex()}))
        """#

    @Test("a document a DRM vendor writes by the specification (Python: the key encrypted for Satchel's certificate, the vendor's own Widevine pssh, FairPlay's key URI, a Marlin entry): imported, and packaged from as cbcs with the vendor's pssh byte for byte and its key URI; Shaka Packager decrypts the package with the key to the source's packets; Marlin named as left out")
    func vendorDocument() async throws {
        let (folder, input, certificate, privateKey) = try await Self.stage("vendor")
        let kid = "0fb31e2a5d6c4b7a8e9f0a1b2c3d4e5f", key = "5f4e3d2c1b0a9f8e7d6c5b4a39281706", iv = "000102030405060708090a0b0c0d0e0f"
        try await TestMedia.offloaded { () throws -> Void in
            let document = folder.appendingPathComponent("vendor.xml").path
            let written = try Self.python(Self.vendor, [document, certificate, kid, key, iv])
            #expect(written["valid"] as? Bool == true, "the hand-written document is valid CPIX: \(written["errors"] ?? "")")
            let imported = try CLIRunner.run(["keys", "import", "--cpix", document, "--private-key", privateKey, "--asset-id", "film-7",
                                              "--data-dir", folder.appendingPathComponent("data").path])
            #expect(imported.status == 0, "\(imported.stderr)")
            let listed = try CLIRunner.run(["keys", "list", "--data-dir", folder.appendingPathComponent("data").path])
            #expect(listed.stdout.contains("film-7\t\(kid)"), "\(listed.stdout)")

            let out = folder.appendingPathComponent("film-7")
            let packaged = try CLIRunner.run(["package", input.path, "--out", out.path, "--format", "cmaf", "--scheme", "cbcs", "--segment-duration", "2",
                                              "--cpix", document, "--private-key", privateKey])
            #expect(packaged.status == 0 && packaged.stdout.contains("for widevine, fairplay"), "\(packaged.stderr)")
            #expect(packaged.stderr.contains("system 5e629af538da4063897797ffbd9902d4 is not one Satchel signals; left out"), "\(packaged.stderr)")
            let boxes = try Self.psshBoxes(out.appendingPathComponent("video_0/init.mp4"))
            #expect(boxes["edef8ba979d64acea3c827dcd51d21ed"] == written["widevine"] as? String, "the vendor's Widevine pssh, byte for byte")
            #expect(boxes.count == 1, "only the systems the document lists: \(boxes.keys)")
            let media = try String(contentsOf: out.appendingPathComponent("video_0/index.m3u8"), encoding: .utf8)
            #expect(media.contains(#"#EXT-X-KEY:METHOD=SAMPLE-AES,URI="skd://vendor/film-7",KEYFORMAT="com.apple.streamingkeydelivery""#), "\(media)")
            let keyFile = try String(contentsOfFile: out.path + ".keys.json", encoding: .utf8)
            #expect(keyFile.contains(key) && keyFile.contains(iv), "the vendor's key and IV")

            // Shaka decrypts the video with the vendor's key to the source's packets.
            let clear = folder.appendingPathComponent("video-clear.mp4")
            try ShakaInteropTests.shakaDecrypt(out.appendingPathComponent("video_0"), stream: "video", kid: kid, key: key, into: clear)
            func hashes(_ path: String, map: String) throws -> [String] {
                try TestMedia.run("ffmpeg", ["-v", "error", "-i", path, "-map", map, "-c", "copy", "-f", "framemd5", "-"]).split(separator: "\n")
                    .filter { !$0.hasPrefix("#") }.map { $0.split(separator: ",").suffix(2).map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ",") }
            }
            let source = try hashes(input.path, map: "0:v"), shaka = try hashes(clear.path, map: "0")
            #expect(!source.isEmpty && shaka == source, "Shaka's decryption with the vendor's key is the source")

            // Out again, to another packager: the vendor's own Widevine pssh, FairPlay key URI and Marlin entry, not Satchel's.
            let onward = folder.appendingPathComponent("onward.xml").path
            let exported = try CLIRunner.run(["keys", "export", "--cpix", onward, "--asset-id", "film-7", "--data-dir", folder.appendingPathComponent("data").path,
                                              "--recipient", certificate, "--drm", "widevine,fairplay"])
            #expect(exported.status == 0 && exported.stdout.contains("signalling for widevine, fairplay, 5e629af538da4063897797ffbd9902d4, as imported"),
                    "\(exported.stdout)\(exported.stderr)")
            let opened = try Self.python(Self.opener, [onward, privateKey])
            #expect(opened["valid"] as? Bool == true, "\(opened["errors"] ?? "")")
            let systems = opened["systems"] as? [[String: Any]] ?? []
            let widevine = systems.first { $0["system"] as? String == "edef8ba9-79d6-4ace-a3c8-27dcd51d21ed" }
            #expect(widevine?["pssh"] as? String == written["widevine"] as? String, "the vendor's Widevine pssh, byte for byte")
            let fairPlay = systems.first { $0["system"] as? String == "94ce86fb-07ff-4f43-adb8-93d2fa968ca2" }
            #expect(fairPlay?["uri"] as? String == "skd://vendor/film-7", "the vendor's key URI: \(String(describing: fairPlay))")
            #expect(systems.contains { $0["system"] as? String == "5e629af5-38da-4063-8977-97ffbd9902d4" }, "the system Satchel does not know, handed on")
            #expect(systems.count == 3 && systems.allSatisfy { $0["kid"] as? String == kid }, "\(systems)")
        }
    }

    @Test("keys export takes the scheme the keys were packaged or imported with: a cenc package's keys (registered, or imported from its key file) are exported with PlayReady's cenc header, the package's own pssh; --scheme cbcs still chooses")
    func exportKeepsScheme() async throws {
        let (folder, input, certificate, privateKey) = try await Self.stage("scheme")
        try await TestMedia.offloaded { () throws -> Void in
            let data = folder.appendingPathComponent("data").path, keys = folder.appendingPathComponent("reel.keys.json").path
            let packaged = try CLIRunner.run(["package", input.path, "--out", folder.appendingPathComponent("reel").path, "--format", "cmaf", "--scheme", "cenc",
                                              "--register", "--asset-id", "reel", "--data-dir", data, "--keys-out", keys, "--drm", "playready"])
            #expect(packaged.status == 0, "\(packaged.stderr)")
            #expect(try CLIRunner.run(["keys", "import", keys, "--asset-id", "reel-copy", "--data-dir", folder.appendingPathComponent("copy").path]).status == 0)
            let boxes = try Self.psshBoxes(folder.appendingPathComponent("reel/video_0/init.mp4"))
            let playReady = "9a04f07998404286ab92e65be0885f95"
            #expect(boxes[playReady] != nil)
            func exported(_ asset: String, store: String, _ more: [String] = []) throws -> (line: String, pssh: String?) {
                let document = folder.appendingPathComponent("\(asset)-\(more.count).xml").path
                let result = try CLIRunner.run(["keys", "export", "--cpix", document, "--asset-id", asset, "--data-dir", store, "--recipient", certificate,
                                                "--drm", "playready"] + more)
                #expect(result.status == 0, "\(result.stderr)")
                let systems = try Self.python(Self.opener, [document, privateKey])["systems"] as? [[String: Any]] ?? []
                return (result.stdout, systems.first?["pssh"] as? String)
            }
            let registered = try exported("reel", store: data)
            #expect(registered.line.contains("scheme cenc") && registered.pssh == boxes[playReady], "\(registered.line)")
            let imported = try exported("reel-copy", store: folder.appendingPathComponent("copy").path)
            #expect(imported.line.contains("scheme cenc") && imported.pssh == boxes[playReady], "\(imported.line)")
            let chosen = try exported("reel", store: data, ["--scheme", "cbcs"])
            #expect(chosen.line.contains("scheme cbcs") && chosen.pssh != nil && chosen.pssh != boxes[playReady], "\(chosen.line)")
        }
    }

    @Test("refused with a clear line: keys import --cpix without the private key, with another's, a document changed after it was written; keys export of an asset with no keys; package --cpix with --key")
    func refusals() async throws {
        let (folder, input, certificate, privateKey) = try await Self.stage("refusals")
        try await TestMedia.offloaded { () throws -> Void in
            let data = folder.appendingPathComponent("data").path
            #expect(try CLIRunner.run(["package", input.path, "--out", folder.appendingPathComponent("film").path, "--format", "cmaf", "--scheme", "cenc",
                                       "--register", "--asset-id", "film", "--data-dir", data]).status == 0)
            let document = folder.appendingPathComponent("film.xml").path
            #expect(try CLIRunner.run(["keys", "export", "--cpix", document, "--asset-id", "film", "--data-dir", data, "--recipient", certificate,
                                       "--scheme", "cenc"]).status == 0)
            let other = folder.appendingPathComponent("other.key").path
            _ = try TestMedia.run("openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", other])
            let text = try String(contentsOfFile: document, encoding: .utf8)
            let changed = folder.appendingPathComponent("changed.xml").path
            // The content key's MAC with its first character changed: still base64, no longer the MAC.
            let mac = try #require(text.components(separatedBy: "<pskc:ValueMAC>").last?.components(separatedBy: "<").first)
            let forged = (mac.first == "A" ? "B" : "A") + mac.dropFirst()
            try text.replacingOccurrences(of: mac, with: forged).write(toFile: changed, atomically: true, encoding: .utf8)
            let store = folder.appendingPathComponent("elsewhere").path
            for (arguments, words) in [
                (["keys", "import", "--cpix", document, "--asset-id", "x", "--data-dir", store], "the keys are encrypted: give the recipient's private key"),
                (["keys", "import", "--cpix", document, "--private-key", other, "--asset-id", "x", "--data-dir", store], "does not open with this private key"),
                (["keys", "import", "--cpix", changed, "--private-key", privateKey, "--asset-id", "x", "--data-dir", store], "MAC does not match"),
                (["keys", "export", "--cpix", folder.appendingPathComponent("none.xml").path, "--asset-id", "nothing", "--data-dir", data], "no keys for asset nothing"),
                (["package", input.path, "--out", folder.appendingPathComponent("p").path, "--format", "cmaf", "--scheme", "cenc", "--cpix", document,
                  "--key-id", "00112233445566778899aabbccddeeff", "--key", "00112233445566778899aabbccddeeff"], "--cpix holds the key"),
            ] {
                let result = try CLIRunner.run(arguments)
                #expect(result.status != 0 && result.stderr.contains(words), "\(arguments[0...1]): \(result.stderr)")
            }
            #expect(try CLIRunner.run(["keys", "list", "--data-dir", store]).stdout.isEmpty, "nothing was imported")
        }
    }
}
