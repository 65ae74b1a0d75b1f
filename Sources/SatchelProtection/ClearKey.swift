import Foundation
import SatchelBytes

/// W3C Clear Key license messages (EME §9.1).
public enum ClearKey {
    /// A license request: the key IDs wanted and the session type.
    public struct Request: Sendable, Equatable {
        /// Requested key IDs.
        public var keyIDs: [KeyID]
        /// "temporary" or "persistent-license".
        public var type: String

        /// Creates a request.
        public init(keyIDs: [KeyID], type: String = "temporary") {
            self.keyIDs = keyIDs
            self.type = type
        }

        /// Parses `{"kids": [...], "type": "..."}`.
        public init(json: [UInt8]) throws(ProtectionError) {
            guard let message = try? JSONCoding.decoder().decode(Message.self, from: Data(json)) else {
                throw .invalidMessage("a Clear Key request is a JSON object with a \"kids\" array")
            }
            let kids = message.kids
            guard !kids.isEmpty, kids.count <= 64 else { throw .invalidMessage("a Clear Key request names 1 to 64 key IDs") }
            keyIDs = try kids.map { (text) throws(ProtectionError) in
                guard let bytes = Base64URL.decode(text), bytes.count == 16 else {
                    throw .invalidMessage("key ID \"\(text.prefix(40))\" is not 16 bytes of base64url")
                }
                return try KeyID(bytes)
            }
            let type = message.type ?? "temporary"
            guard ["temporary", "persistent-license"].contains(type) else { throw .invalidMessage("session type \"\(type.prefix(40))\"") }
            self.type = type
        }

        /// The request's JSON shape (EME §9.1.3).
        private struct Message: Decodable {
            let kids: [String]
            let type: String?
        }

        /// The JSON body.
        public var json: [UInt8] {
            let kids = keyIDs.map { "\"\($0.base64URL)\"" }.joined(separator: ",")
            return Array("{\"kids\":[\(kids)],\"type\":\"\(type)\"}".utf8)
        }
    }

    /// The license response: `{"keys":[{"kty":"oct","k":…,"kid":…}],"type":…}`, base64url without padding.
    public static func response(keys: [(keyID: KeyID, key: SecretBytes)], type: String) -> [UInt8] {
        let entries = keys.map { "{\"kty\":\"oct\",\"k\":\"\(Base64URL.encode($0.key.bytes))\",\"kid\":\"\($0.keyID.base64URL)\"}" }
        return Array("{\"keys\":[\(entries.joined(separator: ","))],\"type\":\"\(type)\"}".utf8)
    }

    /// Reads a license response into key IDs and keys.
    public static func parseResponse(_ json: [UInt8]) throws(ProtectionError) -> [(keyID: KeyID, key: SecretBytes)] {
        struct Entry: Decodable {
            let kty: String?
            let k: String?
            let kid: String?
        }
        struct License: Decodable {
            let keys: [Entry]
        }
        guard let license = try? JSONCoding.decoder().decode(License.self, from: Data(json)) else {
            throw .invalidMessage("a Clear Key response has a \"keys\" array")
        }
        return try license.keys.map { (entry) throws(ProtectionError) in
            guard entry.kty == "oct", let k = entry.k.flatMap(Base64URL.decode), k.count == 16,
                  let kid = entry.kid.flatMap(Base64URL.decode), kid.count == 16 else {
                throw .invalidMessage("a Clear Key response entry needs kty \"oct\", a 16-byte k and kid")
            }
            return (try KeyID(kid), SecretBytes(k))
        }
    }
}
