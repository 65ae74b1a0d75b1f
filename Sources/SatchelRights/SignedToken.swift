import Crypto
import Foundation
import SatchelBytes

/// Compact JWS (RFC 7515) with ES256 (P-256, SHA-256; the 64-byte r‖s signature of RFC 7518 §3.4): the
/// format of Satchel's licenses, device certificates, device requests and signed times. Claims are JSON
/// with dates as seconds since 1970.
public enum SignedToken {
    /// Tokens longer than this are refused before any work (a license of hundreds of keys fits easily).
    public static let maximumLength = 256 * 1024

    /// Signs `claims` with `key`; `kid` names the key in the header (how a JWKS is searched).
    public static func sign(_ claims: some Encodable, key: P256.Signing.PrivateKey, kid: String? = nil) throws(RightsError) -> String {
        var header = #"{"alg":"ES256","typ":"JWT""#
        if let kid { header += #","kid":"# + (Self.jsonString(kid) ?? #""""#) }
        header += "}"
        let payload: Data
        do {
            payload = try RightsJSON.encoder.encode(claims)
        } catch {
            throw .malformedToken("the claims cannot be encoded: \(error)")
        }
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(payload))
        do {
            let signature = try key.signature(for: Data(input.utf8))
            return input + "." + Base64URL.encode(Array(signature.rawRepresentation))
        } catch {
            throw .badKey("cannot sign: \(error)")
        }
    }

    /// Verifies the signature with `key`, then decodes the claims.
    public static func verify<Claims: Decodable>(_ token: String, as type: Claims.Type, key: P256.Signing.PublicKey) throws(RightsError) -> Claims {
        try decode(checkSignature(token, key: key)[1], as: type)
    }

    /// Verifies the signature with `key` and decodes nothing: for claims already read with `unverifiedClaims`
    /// (they are to be trusted once this returns). Answers the token's three parts.
    @discardableResult
    public static func checkSignature(_ token: String, key: P256.Signing.PublicKey) throws(RightsError) -> [Substring] {
        let parts = try split(token)
        guard let raw = Base64URL.decode(parts[2]), raw.count == 64,
              let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw) else {
            throw .malformedToken("the signature is not a 64-byte ES256 signature")
        }
        let input = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(signature, for: input) else { throw .badSignature("the token was not signed by the expected key") }
        return parts
    }

    /// The claims without checking the signature: only to find which key to check it with (a request
    /// names its device certificate); never trust them before `verify`.
    public static func unverifiedClaims<Claims: Decodable>(_ token: String, as type: Claims.Type) throws(RightsError) -> Claims {
        try decode(split(token)[1], as: type)
    }

    /// The header's `kid`, if any.
    public static func keyID(_ token: String) throws(RightsError) -> String? {
        let parts = try split(token)
        guard let bytes = Base64URL.decode(parts[0]),
              let header = try? JSONCoding.decoder().decode([String: JSONValue].self, from: Data(bytes)) else {
            throw .malformedToken("the header is not base64url JSON")
        }
        guard header["alg"]?.string == "ES256" else { throw .malformedToken("the header's alg must be ES256") }
        return header["kid"]?.string
    }

    /// The three parts, cut at the dots byte by byte (a `Character` split walks grapheme clusters, and a device
    /// request carries its certificate: kilobytes on every request).
    private static func split(_ token: String) throws(RightsError) -> [Substring] {
        guard token.utf8.count <= maximumLength else { throw .malformedToken("longer than \(maximumLength) bytes") }
        let utf8 = token.utf8, dot = UInt8(ascii: ".")
        guard let first = utf8.firstIndex(of: dot), let second = utf8[utf8.index(after: first)...].firstIndex(of: dot),
              utf8[utf8.index(after: second)...].firstIndex(of: dot) == nil else {
            throw .malformedToken("a compact JWS has three non-empty parts")
        }
        let parts = [token[..<first], token[utf8.index(after: first)..<second], token[utf8.index(after: second)...]]
        guard parts.allSatisfy({ !$0.isEmpty }) else { throw .malformedToken("a compact JWS has three non-empty parts") }
        return parts
    }

    private static func decode<Claims: Decodable>(_ part: Substring, as type: Claims.Type) throws(RightsError) -> Claims {
        guard let bytes = Base64URL.decode(part) else { throw .malformedToken("the payload is not base64url") }
        do {
            return try RightsJSON.decoder.decode(type, from: Data(bytes))
        } catch {
            throw .malformedToken("the claims are not as expected: \(Self.describe(error))")
        }
    }

    /// A short account of a decoding error (which member, what was wrong), without the input.
    public static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        switch error {
        case let .keyNotFound(key, _): return "missing \(key.stringValue)"
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .dataCorrupted(context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    private static func jsonString(_ text: String) -> String? {
        (try? JSONCoding.encoder().encode(text)).flatMap { String(data: $0, encoding: .utf8) }
    }
}
