import FluentKit
import SQLKit
import SatchelProtection

/// How a key was signalled where it came from: the protection scheme its content was packaged with (`cenc`, `cbcs`,
/// `sample-aes`, `aes-128`) and the DRM systems' signalling a key exchange (a CPIX document) brought with it, in the
/// exchange's own encoding. Kept beside the key so that an export hands a DRM vendor's signalling on unchanged; never
/// read when a license is issued.
public struct KeySignalling: Sendable, Equatable, Codable {
    /// The protection scheme, when the import knew it.
    public var scheme: String?
    /// The DRM systems' signalling for the key, encoded by the exchange that brought it (opaque to the store).
    public var systems: String?

    /// At most this many bytes of systems' signalling a key (a few `pssh` boxes and key tags take a few kilobytes).
    public static let systemsLimit = 64 << 10

    /// Signalling of `scheme` with `systems`.
    public init(scheme: String? = nil, systems: String? = nil) {
        self.scheme = scheme
        self.systems = systems
    }

    /// Refuses a scheme that is not one word of at most 16 bytes, and systems past ``systemsLimit``.
    func checked() throws(LicensingError) -> KeySignalling {
        if let scheme, scheme.isEmpty || scheme.utf8.count > 16 || !scheme.utf8.allSatisfy({ $0 == UInt8(ascii: "-") || ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x7a) }) {
            throw .badRequest("a key's scheme is a lowercase word such as cenc or cbcs")
        }
        if let systems, systems.utf8.count > Self.systemsLimit { throw .badRequest("a key's DRM signalling is larger than \(Self.systemsLimit >> 10) KiB") }
        return self
    }
}

extension KeySignalling {
    /// Each key's signalling of an asset (by asset ID), read through the keys' index by asset; keys without any left out.
    static func rows(of asset: String, on sql: any SQLDatabase) async throws(LicensingError) -> [KeyID: KeySignalling] {
        let rows: [any SQLRow]
        do { rows = try await sql.raw(LicensingQueries.signalling(assetID: asset)).all() } catch { throw .storage("lookup failed") }
        var answer: [KeyID: KeySignalling] = [:]
        for row in rows {
            do {
                let signalling = KeySignalling(scheme: try row.decodeNil(column: "scheme") ? nil : row.decode(column: "scheme", as: String.self),
                                               systems: try row.decodeNil(column: "signalling") ? nil : row.decode(column: "signalling", as: String.self))
                guard signalling != KeySignalling() else { continue }
                answer[try KeyID(hex: row.decode(column: "key_id", as: String.self))] = signalling
            } catch {
                throw .storage("a stored record is damaged")
            }
        }
        return answer
    }
}

/// The scheme and the exchange's signalling of each key (`scheme`, `signalling`: NULL for keys imported before).
struct AddKeySignalling: AsyncMigration {
    func prepare(on database: any Database) async throws {
        try await database.schema(KeyModel.schema).field("scheme", .string).update()
        try await database.schema(KeyModel.schema).field("signalling", .string).update()
    }

    func revert(on database: any Database) async throws {
        try await database.schema(KeyModel.schema).deleteField("signalling").update()
        try await database.schema(KeyModel.schema).deleteField("scheme").update()
    }
}
