import Crypto
import Foundation
import SatchelBytes

/// A P-256 public key as a JSON Web Key (RFC 7517/7518: `kty` EC, `crv` P-256, `x`, `y`): how device
/// keys travel in registrations and certificates and how the license server publishes its signing key.
public struct PublicKeyJWK: Codable, Sendable, Equatable {
    /// "EC".
    public var kty: String
    /// "P-256".
    public var crv: String
    /// The x coordinate, base64url.
    public var x: String
    /// The y coordinate, base64url.
    public var y: String
    /// The key's name (the server's signing key), if any.
    public var kid: String?
    /// "sig" for the server's signing key.
    public var use: String?
    /// "ES256" for the server's signing key.
    public var alg: String?

    /// The JWK of a P-256 key (the same point serves signing and HPKE key agreement).
    public init(_ key: P256.Signing.PublicKey, kid: String? = nil, use: String? = nil, alg: String? = nil) {
        let raw = Array(key.rawRepresentation)  // x ‖ y, 32 bytes each
        kty = "EC"
        crv = "P-256"
        x = Base64URL.encode(Array(raw.prefix(32)))
        y = Base64URL.encode(Array(raw.suffix(32)))
        self.kid = kid
        self.use = use
        self.alg = alg
    }

    /// The key for verifying signatures.
    public func signingKey() throws(RightsError) -> P256.Signing.PublicKey {
        guard kty == "EC", crv == "P-256" else { throw .badKey("kty must be EC and crv P-256") }
        guard let x = Base64URL.decode(x), let y = Base64URL.decode(y), x.count == 32, y.count == 32 else {
            throw .badKey("x and y must be 32-byte base64url coordinates")
        }
        do {
            return try P256.Signing.PublicKey(rawRepresentation: x + y)
        } catch {
            throw .badKey("the point is not on P-256")
        }
    }

    /// The same key for HPKE: content keys are sealed to it.
    public func agreementKey() throws(RightsError) -> P256.KeyAgreement.PublicKey {
        do {
            return try P256.KeyAgreement.PublicKey(rawRepresentation: signingKey().rawRepresentation)
        } catch let error as RightsError {
            throw error
        } catch {
            throw .badKey("the point is not on P-256")
        }
    }

    /// A stable fingerprint of the key (SHA-256 of x ‖ y, hex; RFC 7638 thumbprints are longer to compute).
    public var fingerprint: String {
        Hex.encode(Array(SHA256.hash(data: (Base64URL.decode(x) ?? []) + (Base64URL.decode(y) ?? []))))
    }
}

/// A JSON Web Key Set of P-256 keys, as `GET /licenses/keys` publishes.
public struct PublicKeySet: Codable, Sendable, Equatable {
    /// The keys.
    public var keys: [PublicKeyJWK]

    /// Creates a set.
    public init(keys: [PublicKeyJWK]) {
        self.keys = keys
    }

    /// The key a token's header names (or the only key when the token names none).
    public func key(for token: String) throws(RightsError) -> P256.Signing.PublicKey {
        let kid = try SignedToken.keyID(token)
        let matches = keys.filter { kid == nil || $0.kid == kid }
        guard let key = matches.first, kid != nil || keys.count == 1 else { throw .badSignature("no key of the set is named by the token") }
        return try key.signingKey()
    }
}
