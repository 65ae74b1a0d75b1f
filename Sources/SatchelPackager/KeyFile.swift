import Foundation
import SatchelBytes
import SatchelProtection

/// `keys.json`: the key IDs, keys and IVs of a package, for a key store to import.
/// Written with mode 0600; it is the only place a package's keys are written.
public struct KeyFile: Codable, Sendable, Equatable {
    /// One key.
    public struct Entry: Codable, Sendable, Equatable {
        /// Key ID, hex.
        public var keyId: String
        /// Content key, hex.
        public var key: String
        /// IV, hex.
        public var iv: String
        /// First segment this key protects (key rotation), 0 otherwise.
        public var firstSegment: Int
    }

    /// The scheme the keys protect.
    public var scheme: String
    /// The FairPlay key URI, if any.
    public var fairPlayURI: String?
    /// The keys.
    public var keys: [Entry]

    /// Entries for content keys.
    init(scheme: String, fairPlayURI: String?, keys: [(ContentKey, Int)]) {
        self.scheme = scheme
        self.fairPlayURI = fairPlayURI
        self.keys = keys.map { Entry(keyId: $0.0.keyID.hex, key: Hex.encode($0.0.key.bytes), iv: Hex.encode($0.0.iv), firstSegment: $0.1) }
    }

    /// Reads a keys.json file.
    public static func read(_ path: String) throws -> KeyFile {
        try JSONDecoder().decode(KeyFile.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The content keys.
    public func contentKeys() throws -> [ContentKey] {
        try keys.map { entry in
            try ContentKey(keyID: KeyID(hex: entry.keyId), key: SecretBytes(hex: entry.key, count: 16), iv: Hex.decode(entry.iv, count: 16))
        }
    }

    var data: [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array((try? encoder.encode(self)) ?? Data())
    }
}
