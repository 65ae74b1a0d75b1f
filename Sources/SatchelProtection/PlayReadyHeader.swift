import Foundation

/// The key IDs of a PlayReady Header Object (the base64 `ProtectionHeader` of a Smooth Streaming manifest, or a
/// PlayReady `pssh` payload): its records of type 1 hold the WRMHEADER XML in UTF-16LE, whose `KID` elements
/// (version 4.0: `<KID>base64</KID>`) or attributes (4.1 and later: `<KID VALUE="base64" …>`) name the keys as GUIDs,
/// their first three fields little-endian. Answered as Common Encryption key IDs (big-endian UUID bytes).
public enum PlayReadyHeader {
    /// The largest header read.
    public static let sizeLimit = 64 << 10

    /// The key IDs named by the header in `base64` (none when it cannot be read).
    public static func keyIDs(base64: String) -> [KeyID] {
        guard base64.utf8.count <= sizeLimit * 2, let data = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)) else { return [] }
        return keyIDs(object: Array(data))
    }

    /// The key IDs named by a PlayReady Header Object's bytes.
    public static func keyIDs(object bytes: [UInt8]) -> [KeyID] {
        guard bytes.count >= 6, bytes.count <= sizeLimit else { return [] }
        func le16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        var ids: [KeyID] = []
        var position = 6
        for _ in 0..<le16(4) {
            guard position + 4 <= bytes.count else { break }
            let type = le16(position), length = le16(position + 2)
            position += 4
            guard length <= bytes.count - position else { break }
            if type == 1 {
                let units = stride(from: position, to: position + length - 1, by: 2).map { UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8 }
                ids += keyIDs(xml: String(decoding: units, as: UTF16.self))
            }
            position += length
        }
        return ids
    }

    /// The key IDs of a WRMHEADER's XML.
    static func keyIDs(xml: String) -> [KeyID] {
        var ids: [KeyID] = []
        var rest = xml[...]
        while let open = rest.range(of: "<KID") {
            rest = rest[open.upperBound...]
            guard let close = rest.firstIndex(of: ">") else { break }
            let attributes = rest[..<close]
            var value: Substring?
            if let start = attributes.range(of: "VALUE=\"") {
                value = attributes[start.upperBound...].prefix { $0 != "\"" }
            } else if attributes.isEmpty || attributes.allSatisfy(\.isWhitespace), let end = rest.range(of: "</KID>") {
                value = rest[rest.index(after: close)..<end.lowerBound]
            }
            if let value, let guid = Data(base64Encoded: String(value).trimmingCharacters(in: .whitespaces)), guid.count == 16,
               let id = try? KeyID(Array(guid)) {
                ids.append(KeyID(guidOrder: id))  // the same swap both ways
            }
            rest = rest[close...]
        }
        return ids
    }
}
