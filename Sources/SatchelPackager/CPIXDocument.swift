import Foundation
import SatchelBytes
import SatchelMedia
import SatchelProtection

/// A DASH-IF CPIX (Content Protection Information Exchange) document: the content keys of an asset and each DRM
/// system's signalling for them, as packagers and DRM vendors' key services exchange them. The keys are in the
/// clear, or encrypted for one recipient (``CPIXRecipient``): a document key wrapped with the recipient's RSA key
/// (RSA-OAEP), each content key AES-256-CBC under it with an HMAC-SHA512 value MAC. ``xml(for:)`` writes one;
/// ``init(xml:privateKey:)`` reads one.
public struct CPIXDocument: Sendable {
    /// One content key.
    public struct Key: Sendable {
        /// The key, its ID and IV. The IV is the document's `explicitIV` when it gives one.
        public var contentKey: ContentKey
        /// The document gave the IV (`explicitIV`); else ``contentKey``'s IV was made here.
        public var explicitIV: Bool
        /// The protection scheme the document names for the key (`commonEncryptionScheme`, CPIX 2.3), when it does.
        public var scheme: String?

        /// A content key; `explicitIV` writes its IV into the document.
        public init(_ contentKey: ContentKey, explicitIV: Bool = true) {
            self.contentKey = contentKey
            self.explicitIV = explicitIV
        }
    }

    /// One DRM system's signalling for one key.
    public struct System: Sendable, Equatable {
        /// The key ID it is for.
        public var keyID: KeyID
        /// The system ID (16 bytes).
        public var systemID: [UInt8]
        /// The system's `pssh` box, when it has one.
        public var pssh: [UInt8]?
        /// The key URI of HLS key tags (FairPlay's `skd://` URI), when given (`URIExtXKey`).
        public var hlsKeyURI: String?
        /// The HLS media playlist's key tag, whole (`HLSSignalingData playlist="media"`).
        public var hlsMediaTag: String?
        /// The HLS master playlist's session key tag, whole (`HLSSignalingData playlist="master"`).
        public var hlsMasterTag: String?

        /// A system's signalling.
        public init(keyID: KeyID, systemID: [UInt8], pssh: [UInt8]? = nil, hlsKeyURI: String? = nil, hlsMediaTag: String? = nil,
                    hlsMasterTag: String? = nil) {
            self.keyID = keyID
            self.systemID = systemID
            self.pssh = pssh
            self.hlsKeyURI = hlsKeyURI
            self.hlsMediaTag = hlsMediaTag
            self.hlsMasterTag = hlsMasterTag
        }

        /// The system, when Satchel knows it.
        public var system: DRMSystem? { DRMSystem(systemID: systemID) }
    }

    /// The documents read are at most this large (a key rotation of thousands of keys stays far below).
    public static let sizeLimit = 16 << 20
    /// At most this many content keys and DRM system entries each.
    public static let countLimit = 100_000

    /// The content ID (`contentId`), when given.
    public var contentID: String?
    /// The content keys.
    public var keys: [Key]
    /// The DRM systems' signalling.
    public var systems: [System]

    /// A document.
    public init(contentID: String? = nil, keys: [Key], systems: [System] = []) {
        self.contentID = contentID
        self.keys = keys
        self.systems = systems
    }

    static let namespaces = #"xmlns:cpix="urn:dashif:org:cpix" xmlns:pskc="urn:ietf:params:xml:ns:keyprov:pskc" "#
        + #"xmlns:ds="http://www.w3.org/2000/09/xmldsig#" xmlns:enc="http://www.w3.org/2001/04/xmlenc#""#
    static let contentKeyAlgorithm = "http://www.w3.org/2001/04/xmlenc#aes256-cbc"
    static let keyWrapAlgorithm = "http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p"
    static let macAlgorithm = "http://www.w3.org/2001/04/xmldsig-more#hmac-sha512"

    /// The document as XML: the keys in the clear (`PlainValue`), or encrypted for `recipient`. Secret: it holds
    /// the keys (in the clear, or for whoever holds the recipient's private key).
    public func xml(for recipient: CPIXRecipient? = nil) throws(PackagerError) -> String {
        var lines = [#"<?xml version="1.0" encoding="UTF-8"?>"#]
        lines.append("<cpix:CPIX \(Self.namespaces)" + (contentID.map { " contentId=\"\(xmlEscape($0))\"" } ?? "") + ">")
        var sealing: CPIXSealing?
        if let recipient {
            let seal = CPIXSealing.random()
            sealing = seal
            lines += [
                "  <cpix:DeliveryDataList>", #"    <cpix:DeliveryData id="recipient">"#,
                "      <cpix:DeliveryKey><ds:X509Data><ds:X509Certificate>\(Data(recipient.certificate).base64EncodedString())</ds:X509Certificate></ds:X509Data></cpix:DeliveryKey>",
                "      <cpix:DocumentKey Algorithm=\"\(Self.contentKeyAlgorithm)\"><cpix:Data><pskc:Secret><pskc:EncryptedValue>"
                    + Self.encrypted(try recipient.wrap(seal.documentKey), algorithm: Self.keyWrapAlgorithm)
                    + "</pskc:EncryptedValue></pskc:Secret></cpix:Data></cpix:DocumentKey>",
                "      <cpix:MACMethod Algorithm=\"\(Self.macAlgorithm)\"><pskc:MACKey>"
                    + Self.encrypted(try recipient.wrap(seal.macKey), algorithm: Self.keyWrapAlgorithm) + "</pskc:MACKey></cpix:MACMethod>",
                "    </cpix:DeliveryData>", "  </cpix:DeliveryDataList>",
            ]
        }
        lines.append("  <cpix:ContentKeyList>")
        for key in keys {
            let iv = key.explicitIV ? " explicitIV=\"\(Data(key.contentKey.iv).base64EncodedString())\"" : ""
            let secret: String
            if let sealing {
                let sealed = try sealing.seal(key.contentKey.key)
                secret = "<pskc:EncryptedValue>\(Self.encrypted(sealed.value, algorithm: Self.contentKeyAlgorithm))</pskc:EncryptedValue>"
                    + "<pskc:ValueMAC>\(Data(sealed.mac).base64EncodedString())</pskc:ValueMAC>"
            } else {
                secret = "<pskc:PlainValue>\(Data(key.contentKey.key.bytes).base64EncodedString())</pskc:PlainValue>"
            }
            lines.append("    <cpix:ContentKey kid=\"\(key.contentKey.keyID.uuidString)\"\(iv)><cpix:Data><pskc:Secret>\(secret)</pskc:Secret></cpix:Data></cpix:ContentKey>")
        }
        lines.append("  </cpix:ContentKeyList>")
        if !systems.isEmpty {
            lines.append("  <cpix:DRMSystemList>")
            for system in systems {
                let id = (try? KeyID(system.systemID).uuidString) ?? ""  // a system ID is 16 bytes, written as a UUID too
                var element = "    <cpix:DRMSystem kid=\"\(system.keyID.uuidString)\" systemId=\"\(id)\">"
                if let pssh = system.pssh { element += "<cpix:PSSH>\(Data(pssh).base64EncodedString())</cpix:PSSH>" }
                if let uri = system.hlsKeyURI { element += "<cpix:URIExtXKey>\(Data(uri.utf8).base64EncodedString())</cpix:URIExtXKey>" }
                if let tag = system.hlsMasterTag { element += #"<cpix:HLSSignalingData playlist="master">\#(Data(tag.utf8).base64EncodedString())</cpix:HLSSignalingData>"# }
                if let tag = system.hlsMediaTag { element += #"<cpix:HLSSignalingData playlist="media">\#(Data(tag.utf8).base64EncodedString())</cpix:HLSSignalingData>"# }
                lines.append(element + "</cpix:DRMSystem>")
            }
            lines.append("  </cpix:DRMSystemList>")
        }
        lines.append("</cpix:CPIX>")
        return lines.joined(separator: "\n") + "\n"
    }

    private static func encrypted(_ value: [UInt8], algorithm: String) -> String {
        "<enc:EncryptionMethod Algorithm=\"\(algorithm)\"/><enc:CipherData><enc:CipherValue>\(Data(value).base64EncodedString())</enc:CipherValue></enc:CipherData>"
    }
}
