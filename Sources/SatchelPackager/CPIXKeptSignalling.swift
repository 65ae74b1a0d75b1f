import Foundation
import SatchelBytes
import SatchelProtection

/// A DRM system's signalling as a key store keeps it beside the key (JSON: the system ID as a UUID, the `pssh` box in
/// base64, the key URI and the playlists' key tags as text), so that a document imported from a DRM vendor is
/// exported again with the vendor's signalling, not Satchel's.
extension CPIXDocument.System: Codable {
    private enum CodingKeys: String, CodingKey { case systemID = "systemId", pssh, uri, mediaTag, masterTag }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let systemID = try KeyID(hex: container.decode(String.self, forKey: .systemID)).bytes
        let pssh = try container.decodeIfPresent(String.self, forKey: .pssh).map { text in
            guard let data = Data(base64Encoded: text) else { throw DecodingError.dataCorruptedError(forKey: .pssh, in: container, debugDescription: "not base64") }
            return Array(data)
        }
        // The key is not part of what is kept: the store keeps each key's own systems.
        self.init(keyID: try KeyID(Array(repeating: 0, count: 16)), systemID: systemID, pssh: pssh,
                  hlsKeyURI: try container.decodeIfPresent(String.self, forKey: .uri),
                  hlsMediaTag: try container.decodeIfPresent(String.self, forKey: .mediaTag),
                  hlsMasterTag: try container.decodeIfPresent(String.self, forKey: .masterTag))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(try KeyID(systemID).uuidString, forKey: .systemID)
        try container.encodeIfPresent(pssh.map { Data($0).base64EncodedString() }, forKey: .pssh)
        try container.encodeIfPresent(hlsKeyURI, forKey: .uri)
        try container.encodeIfPresent(hlsMediaTag, forKey: .mediaTag)
        try container.encodeIfPresent(hlsMasterTag, forKey: .masterTag)
    }
}

extension CPIXDocument {
    /// The systems this document lists for the key `keyID`, encoded to be kept beside the key; nil when it lists none.
    public func keptSignalling(of keyID: KeyID) -> String? {
        let listed = systems.filter { $0.keyID == keyID }
        guard !listed.isEmpty, let data = try? JSONCoding.encoder().encode(listed) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Systems kept by ``keptSignalling(of:)``, for the key `keyID`.
    public static func keptSystems(_ text: String, keyID: KeyID) throws(PackagerError) -> [System] {
        do {
            return try JSONCoding.decoder().decode([System].self, from: Data(text.utf8)).map { system in
                var system = system
                system.keyID = keyID
                return system
            }
        } catch {
            throw .cpix("the DRM signalling kept for the key \(keyID.uuidString) cannot be read")
        }
    }

    /// This document with `kept` in place of its own signalling for the same key and system, and any system it does
    /// not signal added: what a DRM vendor gave is handed on unchanged.
    public func keeping(_ kept: [System]) -> CPIXDocument {
        var document = self
        for system in kept {
            if let index = document.systems.firstIndex(where: { $0.keyID == system.keyID && $0.systemID == system.systemID }) {
                document.systems[index] = system
            } else {
                document.systems.append(system)
            }
        }
        return document
    }
}
