import Crypto
import Foundation
import SatchelBytes

/// A server's answer signed as it travels: a JWS with detached content (RFC 7515, appendix F) over the answer's exact
/// bytes, carried in the `Satchel-Signature` header. Its protected header names the signing key (`kid`) and the nonce of
/// the device request it answers, so an answer changed on the way, or an old answer played again, does not verify. No
/// JSON is re-encoded to check it: the bytes received are the bytes signed.
public enum SignedAnswer {
    /// The response header that carries the signature.
    public static let header = "Satchel-Signature"

    /// The signature of `body`, answering the request whose nonce is `nonce`: `header..signature`.
    public static func sign(_ body: Data, nonce: String, key: P256.Signing.PrivateKey, kid: String) throws(RightsError) -> String {
        let fields = Header(alg: "ES256", kid: kid, nonce: nonce, typ: "satchel-answer")
        guard let header = try? JSONCoding.encoder().encode(fields) else { throw .malformedToken("the header cannot be encoded") }
        let protected = Base64URL.encode(Array(header))
        do {
            let signature = try key.signature(for: Data(signingInput(protected, body).utf8))
            return protected + ".." + Base64URL.encode(Array(signature.rawRepresentation))
        } catch {
            throw .badKey("cannot sign: \(error)")
        }
    }

    /// Checks that `signature` signs `body` with a key of `keys`, answering the request whose nonce is `nonce`.
    public static func verify(_ signature: String?, body: Data, nonce: String, keys: PublicKeySet) throws(RightsError) {
        guard let signature, signature.utf8.count <= 1024 else { throw .badSignature("the answer carries no \(header) header") }
        let parts = signature.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[1].isEmpty, let headerBytes = Base64URL.decode(parts[0]),
              let fields = try? JSONCoding.decoder().decode(Header.self, from: Data(headerBytes)), fields.alg == "ES256",
              let raw = Base64URL.decode(parts[2]), raw.count == 64, let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: raw) else {
            throw .malformedToken("the \(header) header is not an ES256 JWS with detached content")
        }
        guard let jwk = keys.keys.first(where: { $0.kid == fields.kid }) else { throw .badSignature("the answer is signed by a key this device does not know") }
        guard try jwk.signingKey().isValidSignature(ecdsa, for: Data(signingInput(String(parts[0]), body).utf8)) else {
            throw .badSignature("the answer's signature does not match its content")
        }
        guard fields.nonce == nonce else { throw .badSignature("the answer is not the answer to this request") }
    }

    /// The ID of the key `signature` names (nil when it names none or cannot be read): which key to look for.
    public static func keyID(_ signature: String?) -> String? {
        guard let signature, signature.utf8.count <= 1024, let protected = signature.split(separator: ".", omittingEmptySubsequences: false).first,
              let bytes = Base64URL.decode(protected) else { return nil }
        return (try? JSONCoding.decoder().decode(Header.self, from: Data(bytes)))?.kid
    }

    private static func signingInput(_ protected: String, _ body: Data) -> String {
        protected + "." + Base64URL.encode(Array(body))
    }

    private struct Header: Codable {
        var alg: String
        var kid: String
        var nonce: String
        var typ: String
    }
}
