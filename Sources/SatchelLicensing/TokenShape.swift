import Foundation
import SatchelBytes

/// The header and claims of an entitlement token, read (not yet verified) so that every malformed part
/// is named precisely: which claim is wrong and how, an unknown `kid`, a `crit` header Satchel cannot honour.
struct TokenShape: Sendable {
    /// The header's `kid`, if any.
    let kid: String?
    /// `exp`, `nbf` (seconds since 1970), `aud` (one or several), `iss`.
    let expires: Date
    let notBefore: Date?
    let audiences: [String]?
    let issuer: String?

    /// Reads a compact JWS. Throws `invalidEntitlement` naming what is wrong.
    init(_ token: String) throws(LicensingError) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16_384 else {
            throw .invalidEntitlement("the token is not a signed JWT (three base64url parts, at most 16 KiB)")
        }
        let header = try Self.object(parts[0], what: "header")
        let claims = try Self.object(parts[1], what: "payload")
        if header["crit"] != nil { throw .invalidEntitlement("the token's header lists critical parameters (crit) this server does not understand") }
        guard case .string? = header["alg"] else { throw .invalidEntitlement("the token's header has no \"alg\"") }
        switch header["kid"] {
        case nil: kid = nil
        case let .string(value)?: kid = value
        default: throw .invalidEntitlement("the token's header \"kid\" must be a string")
        }
        for name in ["sub", "asset"] {
            guard case .string? = claims[name] else { throw .invalidEntitlement("claim \"\(name)\" is missing or not a string") }
        }
        guard let exp = try Self.time(claims, "exp") else { throw .invalidEntitlement("claim \"exp\" is missing") }
        expires = exp
        notBefore = try Self.time(claims, "nbf")
        _ = try Self.time(claims, "iat")
        switch claims["aud"] {
        case nil: audiences = nil
        case let .string(value)?: audiences = [value]
        case let .array(values)?:
            audiences = try values.map { (value) throws(LicensingError) -> String in
                guard case let .string(text) = value else { throw .invalidEntitlement("claim \"aud\" must be a string or an array of strings") }
                return text
            }
        default: throw .invalidEntitlement("claim \"aud\" must be a string or an array of strings")
        }
        switch claims["iss"] {
        case nil: issuer = nil
        case let .string(value)?: issuer = value
        default: throw .invalidEntitlement("claim \"iss\" must be a string")
        }
        switch claims["persistent"] {
        case nil, .bool?, .null?: break
        default: throw .invalidEntitlement("claim \"persistent\" must be true or false")
        }
        switch claims["policy"] {
        case nil, .object?, .null?: break
        default: throw .invalidEntitlement("claim \"policy\" must be an object")
        }
    }

    private static func object(_ part: Substring, what: String) throws(LicensingError) -> [String: JSONValue] {
        guard let bytes = Base64URL.decode(String(part)),
              let value = try? JSONCoding.decoder().decode(JSONValue.self, from: Data(bytes)), case let .object(object) = value else {
            throw .invalidEntitlement("the token's \(what) is not base64url-encoded JSON object")
        }
        return object
    }

    private static func time(_ claims: [String: JSONValue], _ name: String) throws(LicensingError) -> Date? {
        switch claims[name] {
        case nil: return nil
        case let .number(seconds)? where seconds.isFinite && abs(seconds) < 1e11:
            return Date(timeIntervalSince1970: seconds)
        default:
            throw .invalidEntitlement("claim \"\(name)\" must be a number of seconds since 1970")
        }
    }
}
