import FluentKit

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
