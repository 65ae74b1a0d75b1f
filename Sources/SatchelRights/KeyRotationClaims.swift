import Foundation

/// A signing key's introduction: the key before it (`previous`) signs that `key` signs for the same server from
/// `issued` on. A device adds a key to those it trusts only through such a statement, checked with a key it already
/// trusts (`GET /licenses/keys/rotations` lists them, oldest first).
public struct KeyRotationClaims: Codable, Sendable, Equatable {
    /// The ID of the key that signs this statement.
    public var previous: String
    /// The new key, its `kid` set.
    public var key: PublicKeyJWK
    /// When it was made.
    public var issued: Date

    /// Creates claims.
    public init(previous: String, key: PublicKeyJWK, issued: Date) {
        self.previous = previous
        self.key = key
        self.issued = issued
    }
}

/// `GET /licenses/keys/rotations`' answer: every statement that introduced a signing key, oldest first.
public struct KeyRotationsAnswer: Codable, Sendable, Equatable {
    /// Signed ``KeyRotationClaims``.
    public var rotations: [String]

    /// Creates an answer.
    public init(rotations: [String]) {
        self.rotations = rotations
    }
}

extension PublicKeySet {
    /// This set with every key the statements `rotations` introduce through a key already in it (each statement checked
    /// with the key it names, in as many passes as the chain needs); a statement that does not verify adds nothing.
    public func extended(by rotations: [String]) -> PublicKeySet {
        var set = self
        var pending = rotations
        while true {
            var added = false
            pending.removeAll { statement in
                guard let kid = try? SignedToken.keyID(statement), let trusted = set.keys.first(where: { $0.kid == kid }),
                      let verifying = try? trusted.signingKey(),
                      let claims = try? SignedToken.verify(statement, as: KeyRotationClaims.self, key: verifying),
                      claims.previous == kid, let newKid = claims.key.kid, (try? claims.key.signingKey()) != nil else { return false }
                if !set.keys.contains(where: { $0.kid == newKid }) {
                    set.keys.append(claims.key)
                    added = true
                }
                return true
            }
            if !added { return set }
        }
    }
}
