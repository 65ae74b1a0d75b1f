import Foundation
import SatchelBytes
import SatchelSystem
import JWTKit

/// The claims of an entitlement token issued by the content provider's backend.
public struct Entitlement: JWTPayload, Equatable {
    /// The user or device.
    public var sub: SubjectClaim
    /// The asset ID, or "*" for every asset.
    public var asset: String
    /// Expiry.
    public var exp: ExpirationClaim
    /// Whether persistent (offline) licenses may be issued.
    public var persistent: Bool?
    /// Policy overrides.
    public var policy: PolicyOverrides?
    /// The audience (one or several), when the server checks one (`--token-audience`).
    public var aud: AudienceClaim?
    /// The issuer, when the server checks one (`--token-issuer`).
    public var iss: IssuerClaim?

    /// Creates claims; `exp` is written in whole seconds (as issuers write a NumericDate), rounded down.
    public init(subject: String, asset: String, expires: Date, persistent: Bool? = nil, policy: PolicyOverrides? = nil) {
        sub = SubjectClaim(value: subject)
        self.asset = asset
        exp = ExpirationClaim(value: Date(timeIntervalSince1970: expires.timeIntervalSince1970.rounded(.down)))
        self.persistent = persistent
        self.policy = policy
    }

    /// The signature is checked by jwt-kit; the times and audience by ``EntitlementVerifier``, which names
    /// the claim that fails.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// True when the token names `assetID` (or every asset).
    public func covers(_ assetIDs: [String]) -> Bool { asset == "*" || assetIDs.contains(asset) }
}

/// Verifies entitlement tokens against a JSON Web Key Set: HS256 (kty "oct"), ES256 and RS256 keys.
///
/// A token is refused when its signature does not verify with a key of the set, its header names a `kid`
/// the set does not hold or lists `crit` parameters, `exp` has passed, `nbf` has not come, or — when the
/// verifier is configured with them — its `aud` does not include the audience or its `iss` differs.
public struct EntitlementVerifier: Sendable {
    private let keys: JWTKeyCollection
    private let verified = VerifiedTokens()
    private var kids: Set<String> = []
    /// When set, tokens must list this audience in `aud`.
    public var audience: String?
    /// When set, tokens must carry this `iss`.
    public var issuer: String?

    /// A verifier for the keys of a JWKS document.
    public init(jwks: Data, audience: String? = nil, issuer: String? = nil) async throws(LicensingError) {
        self.audience = audience
        self.issuer = issuer
        guard let document = try? JSONCoding.decoder().decode([String: JSONValue].self, from: jwks), case let .array(list)? = document["keys"],
              !list.isEmpty else {
            throw .configuration("the JWKS must be a JSON object with a non-empty \"keys\" array")
        }
        let collection = JWTKeyCollection()
        var kids: Set<String> = []
        for entry in list {
            guard case var .object(jwk) = entry else { throw .configuration("every entry of the JWKS \"keys\" array must be an object") }
            let kid = jwk["kid"]?.string.map { JWKIdentifier(string: $0) }
            if let name = jwk["kid"]?.string { kids.insert(name) } else if jwk["kty"]?.string != "oct" { kids.insert("default") }
            do {
                switch jwk["kty"]?.string {
                case "oct":
                    guard let k = jwk["k"]?.string.flatMap(Base64URL.decode), k.count >= Self.minimumSecretLength else {
                        throw LicensingError.configuration("an \"oct\" key needs \"k\" of at least 32 bytes (HS256)")
                    }
                    await collection.add(hmac: HMACKey(from: k), digestAlgorithm: .sha256, kid: kid)
                case "RSA", "EC":
                    if jwk["kid"] == nil { jwk["kid"] = .string("default") }
                    let data = try JSONCoding.encoder().encode(jwk)
                    try await collection.add(jwk: JSONCoding.decoder().decode(JWK.self, from: data))
                default:
                    throw LicensingError.configuration("unsupported JWK kty \(jwk["kty"]?.string ?? "(none)") (use oct, EC or RSA)")
                }
            } catch let error as LicensingError {
                throw error
            } catch {
                throw .configuration("a JWKS key cannot be used: \(error)")
            }
        }
        keys = collection
        self.kids = kids
    }

    /// HS256 secrets shorter than the hash output are refused (jwt-kit traps on them).
    static let minimumSecretLength = 32

    /// A verifier with one HS256 secret of at least 32 bytes (tests and simple setups).
    public init(hmacSecret: [UInt8], audience: String? = nil, issuer: String? = nil) async throws(LicensingError) {
        guard hmacSecret.count >= Self.minimumSecretLength else { throw .configuration("an HS256 secret must be at least 32 bytes") }
        self.audience = audience
        self.issuer = issuer
        let collection = JWTKeyCollection()
        await collection.add(hmac: HMACKey(from: hmacSecret), digestAlgorithm: .sha256)
        keys = collection
    }

    /// Verifies a token and returns its claims. A token already verified is answered from memory
    /// until it expires (players present the same token for every request of a session).
    public func verify(_ token: String, now: Date) async throws(LicensingError) -> Entitlement {
        if let cached = verified.get(token, now: now) { return cached }
        let shape = try TokenShape(token)
        if let kid = shape.kid, !kids.contains(kid) {
            throw .invalidEntitlement("the token's kid names no key of this server's key set")
        }
        let entitlement: Entitlement
        do {
            entitlement = try await keys.verify(token, as: Entitlement.self)
        } catch {
            throw .invalidEntitlement("the token's signature does not verify with this server's keys")
        }
        guard shape.expires > now else { throw .invalidEntitlement("the token has expired") }
        if let notBefore = shape.notBefore, notBefore > now { throw .invalidEntitlement("the token is not valid yet (nbf)") }
        if let audience, !(shape.audiences ?? []).contains(audience) {
            throw .invalidEntitlement("the token is not for this audience (aud)")
        }
        if let issuer, shape.issuer != issuer { throw .invalidEntitlement("the token is from another issuer (iss)") }
        verified.put(token, entitlement)
        return entitlement
    }

    /// Signs claims with the collection's default key (development and tests).
    public func sign(_ entitlement: Entitlement) async throws -> String {
        try await keys.sign(entitlement)
    }

    /// Signs claims with the key named `kid` (development: `satchel token`). The key must hold its secret
    /// (`oct`) or private part (EC, RSA).
    public func sign(_ entitlement: Entitlement, kid: String) async throws(LicensingError) -> String {
        guard kids.contains(kid) else { throw .configuration("the JWKS has no key with kid \(kid)") }
        do {
            return try await keys.sign(entitlement, kid: JWKIdentifier(string: kid))
        } catch {
            throw .configuration("the key \(kid) cannot sign (an EC or RSA key needs its private part, \"d\")")
        }
    }
}

/// Tokens whose signature has been checked, kept until their `exp`.
final class VerifiedTokens: Sendable {
    private let entries = Locked<[String: Entitlement]>([:])

    func get(_ token: String, now: Date) -> Entitlement? {
        entries.withLock { entries in
            guard let entitlement = entries[token] else { return nil }
            guard entitlement.exp.value > now else {
                entries[token] = nil
                return nil
            }
            return entitlement
        }
    }

    func put(_ token: String, _ entitlement: Entitlement) {
        entries.withLock { entries in
            if entries.count >= 50_000 { entries.removeAll() }
            entries[token] = entitlement
        }
    }
}
