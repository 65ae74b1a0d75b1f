import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection

extension CPIXDocument {
    /// Reads a CPIX document (bounded: ``sizeLimit`` bytes, ``countLimit`` keys and systems). Encrypted content keys
    /// need `privateKey`, the recipient's: the document key and the MAC key open with it, every key's MAC is checked
    /// before it is decrypted. A document that is malformed, changed, or for another recipient is a
    /// ``PackagerError/cpix(_:)`` that never quotes a key.
    public init(xml: String, privateKey: CPIXPrivateKey? = nil) throws(PackagerError) {
        guard xml.utf8.count <= Self.sizeLimit else { throw .cpix("larger than \(Self.sizeLimit >> 20) MB") }
        let root: MarkupElement
        do { root = try MarkupElement.parse(xml) } catch { throw .cpix("not XML: \(error)") }
        guard root.name == "CPIX" else { throw .cpix("the root element is \(root.name.prefix(40)), not CPIX") }
        // A document with a document key carries every content key encrypted and MACed: a key in the clear beside
        // encrypted ones (a mixed document) could have been put there by anyone on the way.
        let deliversKeys = root.child("DeliveryDataList")?.child("DeliveryData") != nil
        let sealing = try Self.sealing(root.child("DeliveryDataList"), privateKey: privateKey)
        let keyElements = root.child("ContentKeyList")?.children("ContentKey") ?? []
        let systemElements = root.child("DRMSystemList")?.children("DRMSystem") ?? []
        guard keyElements.count <= Self.countLimit, systemElements.count <= Self.countLimit else {
            throw .cpix("more than \(Self.countLimit) content keys or DRM systems")
        }
        var keys: [Key] = []
        var seen = Set<KeyID>()
        for element in keyElements {
            let keyID = try Self.keyID(element.attributes["kid"], in: "ContentKey")
            guard seen.insert(keyID).inserted else { throw .cpix("the key \(keyID.uuidString) is listed twice") }
            guard let secret = element.child("Data")?.child("Secret") else { throw .cpix("the key \(keyID.uuidString) has no Data/Secret") }
            let key: SecretBytes
            if let plain = secret.child("PlainValue") {
                guard !deliversKeys else {
                    throw .cpix("the key \(keyID.uuidString) is in the clear in a document that encrypts its keys: a mixed document is refused")
                }
                key = SecretBytes(try Self.base64(plain.text, what: "a content key"))
            } else if let encrypted = secret.child("EncryptedValue") {
                guard let sealing else { throw .cpix("the keys are encrypted: give the recipient's private key") }
                let value = try Self.base64(encrypted.child("CipherData")?.child("CipherValue")?.text, what: "an encrypted content key")
                key = try sealing.open(value, mac: try secret.child("ValueMAC").map { (mac) throws(PackagerError) in try Self.base64(mac.text, what: "a MAC") })
            } else {
                throw .cpix("the key \(keyID.uuidString) has neither PlainValue nor EncryptedValue")
            }
            guard key.count == 16 else { throw .cpix("the key \(keyID.uuidString) is \(key.count) bytes; Common Encryption keys are 16") }
            let explicit = try element.attributes["explicitIV"].map { (text) throws(PackagerError) in try Self.base64(text, what: "an explicitIV") }
            if let explicit, explicit.count != 16 { throw .cpix("the key \(keyID.uuidString)'s explicitIV is \(explicit.count) bytes, not 16") }
            let scheme = element.attributes["commonEncryptionScheme"]
            if let scheme, !["cenc", "cbcs", "cens", "cbc1"].contains(scheme) {
                throw .cpix("the key \(keyID.uuidString)'s commonEncryptionScheme is not cenc, cbcs, cens or cbc1")
            }
            do {
                var entry = Key(try ContentKey(keyID: keyID, key: key, iv: explicit ?? SecureRandom.bytes(16)), explicitIV: explicit != nil)
                entry.scheme = scheme
                keys.append(entry)
            } catch {
                throw .cpix("the key \(keyID.uuidString): \(error)")
            }
        }
        var systems: [System] = []
        for element in systemElements {
            let keyID = try Self.keyID(element.attributes["kid"], in: "DRMSystem")
            let systemID = try Self.keyID(element.attributes["systemId"], in: "DRMSystem systemId").bytes
            var system = System(keyID: keyID, systemID: systemID)
            system.pssh = try element.child("PSSH").map { (pssh) throws(PackagerError) in try Self.base64(pssh.text, what: "a PSSH") }
            if let pssh = system.pssh {
                guard let parsed = try? PSSH.parse(pssh), parsed.systemID == systemID else {
                    throw .cpix("the PSSH of system \(element.attributes["systemId"]?.prefix(40) ?? "") is not a pssh box of that system")
                }
            }
            system.hlsKeyURI = try element.child("URIExtXKey").map { (element) throws(PackagerError) in
                let uri = try Self.text(element.text, what: "a URIExtXKey")
                guard HLSKey.isWritableURI(uri) else { throw .cpix("a URIExtXKey holds a double quote or a control character, which a playlist cannot carry") }
                return uri
            }
            for data in element.children("HLSSignalingData") {
                let tag = try Self.text(data.text, what: "HLSSignalingData")
                if data.attributes["playlist"] == "master" { system.hlsMasterTag = tag } else { system.hlsMediaTag = tag }
            }
            systems.append(system)
        }
        self.init(contentID: root.attributes["contentId"], keys: keys, systems: systems)
    }

    /// The document key and MAC key of the first delivery data entry, opened with `privateKey`; nil without one.
    private static func sealing(_ list: MarkupElement?, privateKey: CPIXPrivateKey?) throws(PackagerError) -> CPIXSealing? {
        guard let delivery = list?.child("DeliveryData") else { return nil }
        guard let privateKey else { return nil }
        let documentKey = delivery.child("DocumentKey")?.child("Data")?.child("Secret")?.child("EncryptedValue")
        let wrappedDocument = try base64(documentKey?.child("CipherData")?.child("CipherValue")?.text, what: "the document key")
        let wrappedMAC = try base64(delivery.child("MACMethod")?.child("MACKey")?.child("CipherData")?.child("CipherValue")?.text, what: "the MAC key")
        let document = try privateKey.unwrap(wrappedDocument), mac = try privateKey.unwrap(wrappedMAC)
        guard document.count == 32 else { throw .cpix("the document key is \(document.count) bytes, not an AES-256 key") }
        return CPIXSealing(documentKey: document, macKey: mac)
    }

    private static func keyID(_ text: String?, in element: String) throws(PackagerError) -> KeyID {
        guard let text else { throw .cpix("a \(element) has no kid") }
        do { return try KeyID(hex: text.trimmingCharacters(in: .whitespaces)) } catch { throw .cpix("\(element): \"\(text.prefix(40))\" is not a UUID") }
    }

    private static func base64(_ text: String?, what: String) throws(PackagerError) -> [UInt8] {
        guard let text, let data = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines), options: .ignoreUnknownCharacters) else {
            throw .cpix("\(what) is missing or not base64")
        }
        return Array(data)
    }

    private static func text(_ text: String?, what: String) throws(PackagerError) -> String {
        let bytes = try base64(text, what: what)
        guard let decoded = String(bytes: bytes, encoding: .utf8), !decoded.contains("\n") else { throw .cpix("\(what) is not one line of text") }
        return decoded
    }
}
