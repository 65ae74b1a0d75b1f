import Crypto
import FluentKit
import Foundation
import SQLKit
import SatchelBytes
import SatchelRights
import SatchelStorage

/// The server's signing keys: the newest signs (licenses, certificates, times, answers), every one still verifies
/// (certificates and licenses it signed stay good), and each key after the first is introduced by a statement the key
/// before it signed (``KeyRotationClaims``), so a device trusts a new key only through one it already trusts.
///
/// Read from the database at most once a minute per process (a rotation on one node reaches the others within that),
/// and at once when a certificate names a key not yet read (at most once every few seconds).
struct SigningKeyring: Sendable {
    let database: any Database
    let kek: KeyEncryptionKey

    /// What was read: the signer, every key's public half, the statements in the order made.
    struct Keys: Sendable {
        var signer: (kid: String, key: P256.Signing.PrivateKey)
        var verifying: [String: P256.Signing.PublicKey]
        var published: [PublicKeyJWK]
        var rotations: [String]
        var read: Date
    }
    private let cache = Locked<Keys?>(nil)
    /// How long what was read is used; a key not yet known is looked for again after `missRetry`.
    static let lifetime: TimeInterval = 60, missRetry: TimeInterval = 5
    /// The most keys read (rotations are rare: years of them fit).
    static let maximumKeys = 100
    /// One key for every node: made or rotated under a lock every node takes (PostgreSQL: an advisory lock held until
    /// the transaction ends; SQLite has one writer).
    static let lock: Int64 = 0x5341_5443_4845_4C31

    /// The keys, read again when older than `maxAge`; the first key is made when there is none.
    func keys(maxAge: TimeInterval = lifetime) async throws(LicensingError) -> Keys {
        let now = Date()
        if let cached = cache.withLock({ $0 }), now.timeIntervalSince(cached.read) < maxAge { return cached }
        let rows = try await DeviceRows.stored("read or make the license signing key") { () async throws -> [SigningKeyModel] in
            try await database.transaction { database in
                try await Self.takeLock(database)
                if try await SigningKeyModel.query(on: database).count() == 0 {
                    try await make(introducedBy: nil, on: database)
                }
                return try await SigningKeyModel.query(on: database).sort(\.$createdAt, .descending).limit(Self.maximumKeys).all()
            }
        }
        let keys = try read(rows.reversed(), at: now)
        cache.withLock { $0 = keys }
        return keys
    }

    /// The public key named `kid`, looking in the database again when it is not known yet.
    func verifyingKey(_ kid: String?) async throws(LicensingError) -> P256.Signing.PublicKey? {
        let known = try await keys()
        guard let kid else { return known.signer.key.publicKey }
        if let key = known.verifying[kid] { return key }
        return try await keys(maxAge: Self.missRetry).verifying[kid]
    }

    /// Makes a new signing key, introduced by a statement the current one signs; answers its ID.
    func rotate(at now: Date) async throws(LicensingError) -> String {
        let kid = try await DeviceRows.stored("rotate the license signing key") { () async throws -> String in
            try await database.transaction { database in
                try await Self.takeLock(database)
                guard let newest = try await SigningKeyModel.query(on: database).sort(\.$createdAt, .descending).first(), let kid = newest.id else {
                    return try await make(introducedBy: nil, on: database)
                }
                let raw = try kek.open(Array(newest.sealedKey), keyID: "signing:\(kid)")
                return try await make(introducedBy: (kid, try P256.Signing.PrivateKey(rawRepresentation: raw.bytes)), at: now, on: database)
            }
        }
        cache.withLock { $0 = nil }
        return kid
    }

    /// A new key, stored sealed; with `introducedBy`, the statement that key signs for it.
    @discardableResult
    private func make(introducedBy previous: (kid: String, key: P256.Signing.PrivateKey)?, at now: Date = Date(), on database: any Database) async throws -> String {
        let key = P256.Signing.PrivateKey()
        let kid = String(PublicKeyJWK(key.publicKey).fingerprint.prefix(16))
        let sealed = try kek.seal(SecretBytes(Array(key.rawRepresentation)), keyID: "signing:\(kid)")
        let introduction = try previous.map { previous in
            try SignedToken.sign(KeyRotationClaims(previous: previous.kid, key: PublicKeyJWK(key.publicKey, kid: kid, use: "sig", alg: "ES256"), issued: now),
                                 key: previous.key, kid: previous.kid)
        }
        // Created after every other key, even with a clock that went back: the newest signs.
        let newest = try await SigningKeyModel.query(on: database).sort(\.$createdAt, .descending).first()?.createdAt
        let created = max(now, newest.map { $0.addingTimeInterval(0.001) } ?? now)
        try await SigningKeyModel(id: kid, sealedKey: Data(sealed), createdAt: created, introduction: introduction).create(on: database)
        return kid
    }

    private func read(_ rows: [SigningKeyModel], at now: Date) throws(LicensingError) -> Keys {
        var verifying: [String: P256.Signing.PublicKey] = [:], published: [PublicKeyJWK] = [], rotations: [String] = []
        var signer: (kid: String, key: P256.Signing.PrivateKey)?
        for row in rows {
            guard let kid = row.id, let raw = try? kek.open(Array(row.sealedKey), keyID: "signing:\(kid)"),
                  let key = try? P256.Signing.PrivateKey(rawRepresentation: raw.bytes) else { throw .storage("a stored signing key is unusable") }
            verifying[kid] = key.publicKey
            published.insert(PublicKeyJWK(key.publicKey, kid: kid, use: "sig", alg: "ES256"), at: 0)
            if let introduction = row.introduction { rotations.append(introduction) }
            signer = (kid, key)
        }
        guard let signer else { throw .storage("there is no signing key") }
        return Keys(signer: signer, verifying: verifying, published: published, rotations: rotations, read: now)
    }

    private static func takeLock(_ database: any Database) async throws {
        if let sql = database as? any SQLDatabase, sql.dialect.name == "postgresql" {
            try await sql.raw("SELECT pg_advisory_xact_lock(\(bind: lock))").run()
        }
    }
}

/// Records which key introduced each signing key after the first (its ``KeyRotationClaims`` statement).
struct AddSigningKeyIntroductions: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(SigningKeyModel.schema).field("introduction", .string).update()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(SigningKeyModel.schema).deleteField("introduction").update()
    }
}
